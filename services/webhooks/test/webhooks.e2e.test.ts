import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '@loyalty/sdk';
import { startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { WebhookReceiver } from '../../../test/support/webhook-receiver.ts';
import { earn, endpoint, merchant } from './support.ts';

let sys: TestSystem;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] });
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
  await sys?.stop();
});

describe('webhooks end to end', () => {
  it('an earn produces a correctly signed points.earned', async () => {
    const m = await merchant(sys);
    const ep = await endpoint(m.api, receiver.url('/earned'), ['points.earned']);
    const earned = await earn(m.api, m.pointsCard, 42);
    const [hook] = await receiver.waitFor((r) => r.path === '/earned');
    const event = await verifyWebhookSignature({
      payload: hook!.body,
      header: hook!.headers['loyalty-signature'] as string,
      secret: ep.secret,
    });
    expect(event).toMatchObject({
      type: 'points.earned',
      tenant_id: m.tenantId,
      data: { member_id: earned.member_id, transaction_id: earned.transaction_id, points: 42, new_balance: 42 },
    });
    expect(hook!.headers['loyalty-event-id']).toBe(event.id);
    expect(hook!.headers['loyalty-event-type']).toBe('points.earned');
  });
});
