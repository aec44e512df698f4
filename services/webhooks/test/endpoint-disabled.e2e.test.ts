import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningWebhooks } from '@loyalty/webhooks';
import { startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { WebhookReceiver } from '../../../test/support/webhook-receiver.ts';
import { earn, endpoint, eventually, merchant } from './support.ts';

/**
 * An endpoint that fails every delivery for three days is disabled: the webhooks service records
 * `endpoint_disabled`, identity consumes it and mails the tenant's contact, or the operator's
 * address (OPERATOR_EMAIL) when the tenant has none.
 */
let sys: TestSystem;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'webhooks'],
    env: { OPERATOR_EMAIL: 'ops@platform.example', WEBHOOK_POLL_INTERVAL_MS: '100' },
  });
  await receiver.start();
  receiver.respond(() => ({ status: 500 }));
});
afterAll(async () => {
  await receiver.stop();
  await sys?.stop();
});

describe('an endpoint failing for three days', () => {
  it("is disabled, and the tenant's contact (or else the operator) is told by mail", async () => {
    const withContact = await merchant(sys, { contactEmail: 'dev@corner-coffee.example' });
    const without = await merchant(sys);
    const a = await endpoint(withContact.api, receiver.url('/a'), ['points.earned']);
    const b = await endpoint(without.api, receiver.url('/b'), ['points.earned']);
    await earn(withContact.api, withContact.pointsCard);
    await earn(without.api, without.pointsCard);
    await receiver.waitFor((r) => r.path === '/a');
    await receiver.waitFor((r) => r.path === '/b');
    const failingSince = async (api: typeof withContact.api, id: number) =>
      (await api('GET', `/api/v1/webhooks/endpoints/${id}`)).body.data!.endpoint as { failing_since: string | null };
    await eventually(
      () => failingSince(withContact.api, a.id),
      (e) => e.failing_since !== null,
    );
    await eventually(
      () => failingSince(without.api, b.id),
      (e) => e.failing_since !== null,
    );
    sys.clock.advance(72 * 3600_000 + 60_000);
    await (sys.services.webhooks as RunningWebhooks).hooks.sweep();

    const mailA = await sys.mail.waitFor('dev@corner-coffee.example', (m) => m.subject.includes(`${a.id}`), 10_000);
    expect(mailA.subject).toBe(`Webhook endpoint ${a.id} was disabled`);
    expect(mailA.text).toContain(receiver.url('/a'));
    expect(mailA.text).toContain('HTTP 500');
    const mailB = await sys.mail.waitFor('ops@platform.example', (m) => m.subject.includes(`${b.id}`), 10_000);
    expect(mailB.text).toContain(`tenant ${without.tenantId}`);
    expect(sys.mail.messages.filter((m) => m.subject.startsWith('Webhook endpoint'))).toHaveLength(2);

    const shown = (await withContact.api('GET', `/api/v1/webhooks/endpoints/${a.id}`)).body.data!.endpoint;
    expect(shown).toMatchObject({ enabled: false, disabled_reason: 'failing' });
    const log = await withContact.api('GET', `/api/v1/webhooks/endpoints/${a.id}/deliveries`);
    expect(log.body.data!.deliveries).toEqual([
      expect.objectContaining({ status: 'failed', next_attempt_at: null, failed_at: expect.any(String) }),
    ]);
    // A second sweep disables nothing more and mails nobody again.
    await (sys.services.webhooks as RunningWebhooks).hooks.sweep();
    expect(sys.mail.messages.filter((m) => m.subject.startsWith('Webhook endpoint'))).toHaveLength(2);
  });
});
