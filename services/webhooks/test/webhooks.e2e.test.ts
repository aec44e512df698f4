import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookEnvelopeSchema, webhookEventNames, type WebhookEventName } from '@loyalty/contracts';
import type { RunningService } from '@loyalty/runtime';
import { verifyWebhookSignature, WebhookSignatureError } from '@loyalty/sdk';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { WebhookReceiver, type ReceivedWebhook } from '../../../test/support/webhook-receiver.ts';
import { earn, endpoint, eventually, merchant, type Api } from './support.ts';

/**
 * Webhooks through the whole system: the gateway's API, the services' domain events on JetStream,
 * the webhooks service, and a real HTTP receiver.
 */
let sys: TestSystem;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'],
    env: { WEBHOOK_POLL_INTERVAL_MS: '100' },
  });
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
  await sys?.stop();
});

const signatureOf = (r: ReceivedWebhook) => r.headers['loyalty-signature'] as string;
/** Verify as a receiver would, at the system's (test) time: its clock moves ahead in some tests. */
const verify = (r: ReceivedWebhook, secret: string | string[]) =>
  verifyWebhookSignature({ payload: r.body, header: signatureOf(r), secret, now: sys.clock.now().getTime() });
const idem = () => ({ 'idempotency-key': randomUUID() });

async function deliveries(api: Api, endpointId: number, query = '') {
  const r = await api('GET', `/api/v1/webhooks/endpoints/${endpointId}/deliveries${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.deliveries as {
    id: number;
    status: string;
    event: { id: string; type: string; data: Record<string, unknown> };
    attempts: { http_status: number | null; error: string | null; duration_ms: number; attempted_at: string }[];
    next_attempt_at: string | null;
    delivered_at: string | null;
  }[];
}

describe('delivery', () => {
  it('an earn produces a correctly signed points.earned', async () => {
    const m = await merchant(sys);
    const ep = await endpoint(m.api, receiver.url('/earned'), ['points.earned']);
    const earned = await earn(m.api, m.pointsCard, 42);
    const [hook] = await receiver.waitFor((r) => r.path === '/earned');
    const event = await verifyWebhookSignature({ payload: hook!.body, header: signatureOf(hook!), secret: ep.secret });
    expect(event).toEqual({
      id: expect.any(String),
      type: 'points.earned',
      created_at: expect.any(String),
      tenant_id: m.tenantId,
      data: {
        transaction_id: earned.transaction_id,
        member_id: earned.member_id,
        card_id: m.pointsCard,
        points: 42,
        purchase_amount: 42,
        reference: expect.stringMatching(/^order-/),
        previous_balance: 0,
        new_balance: 42,
        // The credit's lot: spendable at once, never expiring (the card has no lifecycle settings).
        pending: false,
        available_at: earned.earned_at,
        expires_at: null,
      },
    });
    expect(hook!.headers['loyalty-event-id']).toBe(event.id);
    expect(hook!.headers['loyalty-event-type']).toBe('points.earned');
    expect(hook!.headers['content-type']).toBe('application/json');
    // The header is t=<unix seconds>,v1=<hex>; another secret, or another body, does not verify.
    expect(signatureOf(hook!)).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    await expect(
      verifyWebhookSignature({ payload: hook!.body, header: signatureOf(hook!), secret: 'whsec_other' }),
    ).rejects.toThrow(WebhookSignatureError);
    await expect(
      verifyWebhookSignature({ payload: `${hook!.body} `, header: signatureOf(hook!), secret: ep.secret }),
    ).rejects.toMatchObject({ code: 'signature_mismatch' });
    await expect(
      verifyWebhookSignature({
        payload: hook!.body,
        header: signatureOf(hook!),
        secret: ep.secret,
        now: Date.now() + 10 * 60_000,
      }),
    ).rejects.toMatchObject({ code: 'timestamp_out_of_tolerance' });
  });

  it('a receiver answering 500 then 200 gets the same event id again, and the log shows both attempts', async () => {
    const m = await merchant(sys);
    receiver.respond((r) => ({
      status: r.path === '/flaky' && receiver.received.filter((x) => x.path === '/flaky').length === 1 ? 500 : 200,
    }));
    const ep = await endpoint(m.api, receiver.url('/flaky'), ['points.earned']);
    await earn(m.api, m.pointsCard);
    await receiver.waitFor((r) => r.path === '/flaky');
    // The retry is due 15-30 s later: move the clock past it.
    const [pending] = await eventually(
      () => deliveries(m.api, ep.id),
      (d) => d[0]?.attempts.length === 1,
    );
    expect(pending).toMatchObject({ status: 'pending', attempts: [{ http_status: 500, error: 'HTTP 500' }] });
    expect(
      Date.parse(pending!.next_attempt_at!) - Date.parse(pending!.attempts[0]!.attempted_at),
    ).toBeGreaterThanOrEqual(15_000);
    sys.clock.advance(31_000);
    const both = await receiver.waitFor((r) => r.path === '/flaky', 2);
    expect(both[1]!.event.id).toBe(both[0]!.event.id);
    expect(both[1]!.body).toBe(both[0]!.body);
    const [done] = await eventually(
      () => deliveries(m.api, ep.id),
      (d) => d[0]?.status === 'delivered',
    );
    expect(done!.attempts.map((a) => a.http_status)).toEqual([500, 200]);
    expect(done!.next_attempt_at).toBeNull();
    expect(done!.delivered_at).not.toBeNull();
    receiver.respond(() => ({ status: 200 }));
  });

  it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
    const m = await merchant(sys);
    const ep = await endpoint(m.api, receiver.url('/rotated'));
    const rotated = await m.api('POST', `/api/v1/webhooks/endpoints/${ep.id}/rotate-secret`, { headers: idem() });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const fresh = (rotated.body.data!.endpoint as { secret: string }).secret;
    expect(fresh).not.toBe(ep.secret);
    expect(fresh).toMatch(/^whsec_/);
    const ping = await m.api('POST', `/api/v1/webhooks/endpoints/${ep.id}/ping`, { headers: idem() });
    expect(ping.status, JSON.stringify(ping.body)).toBe(200);
    const [hook] = await receiver.waitFor((r) => r.path === '/rotated');
    expect(signatureOf(hook!)).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    // Each secret alone verifies: receivers can switch whenever they like within the 24 hours.
    for (const secret of [ep.secret, fresh]) expect((await verify(hook!, secret)).type).toBe('ping');
    sys.clock.advance(24 * 3600_000 + 60_000);
    await m.api('POST', `/api/v1/webhooks/endpoints/${ep.id}/ping`, { headers: idem() });
    const [, later] = await receiver.waitFor((r) => r.path === '/rotated', 2);
    expect(signatureOf(later!)).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    await verify(later!, fresh);
    await expect(verify(later!, ep.secret)).rejects.toMatchObject({ code: 'signature_mismatch' });
  });

  it('redelivers a delivered event with the same id, and logs the new attempt', async () => {
    const m = await merchant(sys);
    const ep = await endpoint(m.api, receiver.url('/again'), ['points.earned']);
    await earn(m.api, m.pointsCard);
    const [first] = await receiver.waitFor((r) => r.path === '/again');
    const [d] = await eventually(
      () => deliveries(m.api, ep.id),
      (x) => x[0]?.status === 'delivered',
    );
    const again = await m.api('POST', `/api/v1/webhooks/deliveries/${d!.id}/redeliver`, { headers: idem() });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.data!.delivery).toMatchObject({ id: d!.id, status: 'pending' });
    const [, second] = await receiver.waitFor((r) => r.path === '/again', 2);
    expect(second!.event.id).toBe(first!.event.id);
    const [redelivered] = await eventually(
      () => deliveries(m.api, ep.id),
      (x) => x[0]?.status === 'delivered' && x[0].attempts.length === 2,
    );
    expect(redelivered!.attempts.map((a) => a.http_status)).toEqual([200, 200]);
  });

  it('sends each endpoint only the event types it asked for', async () => {
    const m = await merchant(sys);
    const points = await endpoint(m.api, receiver.url('/only-points'), ['points.earned']);
    await endpoint(m.api, receiver.url('/only-cashback'), ['cashback.earned']);
    await endpoint(m.api, receiver.url('/everything'), ['*']);
    const earned = await earn(m.api, m.pointsCard);
    const cashback = await m.api('POST', '/api/v1/cashback/cashback/earn', {
      body: {
        card_id: m.cashbackCard,
        member_id: earned.member_id,
        purchase_amount: 20,
        reference: `c-${randomUUID()}`,
      },
    });
    expect(cashback.status, JSON.stringify(cashback.body)).toBe(200);
    // `*` gets all three (the member created by the earn, the points, the cashback).
    const all = await receiver.waitFor((r) => r.path === '/everything' && r.event.tenant_id === m.tenantId, 3);
    expect(all.map((r) => r.event.type).sort()).toEqual(['cashback.earned', 'member.registered', 'points.earned']);
    const [c] = await receiver.waitFor((r) => r.path === '/only-cashback' && r.event.tenant_id === m.tenantId);
    expect(c!.event).toMatchObject({ type: 'cashback.earned', data: { amount: 2, new_balance: 2, currency: 'EUR' } });
    // Every event is in: the filtered endpoints got exactly their type.
    await eventually(
      () => deliveries(m.api, points.id),
      (x) => x.length === 1 && x[0]!.status === 'delivered',
    );
    const kinds = (path: string) =>
      receiver.received.filter((r) => r.path === path && r.event.tenant_id === m.tenantId).map((r) => r.event.type);
    expect(kinds('/only-points')).toEqual(['points.earned']);
    expect(kinds('/only-cashback')).toEqual(['cashback.earned']);
  });

  it('stops sending to a deleted endpoint', async () => {
    const m = await merchant(sys);
    const gone = await endpoint(m.api, receiver.url('/deleted'), ['points.earned']);
    await endpoint(m.api, receiver.url('/kept'), ['points.earned']);
    await earn(m.api, m.pointsCard);
    await receiver.waitFor((r) => r.path === '/deleted' && r.event.tenant_id === m.tenantId);
    const del = await m.api('DELETE', `/api/v1/webhooks/endpoints/${gone.id}`);
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect(del.body.data).toEqual({ endpoint_id: gone.id, deleted: true });
    await earn(m.api, m.pointsCard);
    // The kept endpoint got the second earn, so the event went through the whole path.
    await receiver.waitFor((r) => r.path === '/kept' && r.event.tenant_id === m.tenantId, 2);
    expect(receiver.received.filter((r) => r.path === '/deleted' && r.event.tenant_id === m.tenantId)).toHaveLength(1);
    expect((await m.api('GET', `/api/v1/webhooks/endpoints/${gone.id}`)).status).toBe(404);
    const list = await m.api('GET', '/api/v1/webhooks/endpoints');
    expect((list.body.data!.endpoints as { id: number }[]).map((e) => e.id)).not.toContain(gone.id);
  });

  it('a disabled endpoint gets nothing; enabled again, it gets what happens next', async () => {
    const m = await merchant(sys);
    const ep = await endpoint(m.api, receiver.url('/toggled'), ['points.earned']);
    await endpoint(m.api, receiver.url('/witness'), ['points.earned']);
    const off = await m.api('PATCH', `/api/v1/webhooks/endpoints/${ep.id}`, { body: { enabled: false } });
    expect(off.body.data!.endpoint).toMatchObject({ enabled: false, disabled_reason: 'manual' });
    await earn(m.api, m.pointsCard);
    await receiver.waitFor((r) => r.path === '/witness' && r.event.tenant_id === m.tenantId);
    const redeliverWhileOff = await m.api('POST', `/api/v1/webhooks/endpoints/${ep.id}/ping`, { headers: idem() });
    expect(redeliverWhileOff.status).toBe(409);
    expect(redeliverWhileOff.body.error!.code).toBe('webhook_endpoint_disabled');
    const on = await m.api('PATCH', `/api/v1/webhooks/endpoints/${ep.id}`, { body: { enabled: true } });
    expect(on.body.data!.endpoint).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null });
    await earn(m.api, m.pointsCard);
    await receiver.waitFor((r) => r.path === '/witness' && r.event.tenant_id === m.tenantId, 2);
    await receiver.waitFor((r) => r.path === '/toggled' && r.event.tenant_id === m.tenantId);
    expect(receiver.received.filter((r) => r.path === '/toggled' && r.event.tenant_id === m.tenantId)).toHaveLength(1);
  });
});

describe('event types', () => {
  it('delivers every type of the catalogue from its service, each body exactly as documented', async () => {
    const m = await merchant(sys);
    await endpoint(m.api, receiver.url('/catalogue'));
    const mine = () => receiver.received.filter((r) => r.path === '/catalogue' && r.event.tenant_id === m.tenantId);
    // member.registered (registration), points.*, cashback.*
    const email = `ana.${randomUUID()}@example.com`;
    const ana = await ok(
      m.api('POST', '/api/v1/auth/member/register', {
        body: { name: 'Ana Hook', email, phone: `+4477${Date.now() % 100_000_000}` },
      }),
    );
    const anaId = (ana.member as { id: number }).id;
    const masked = (ana.member as { email: string }).email;
    const token = (await ok(m.api('POST', '/api/v1/auth/member/verify-otp', { body: { email, code: ana.otp_code } })))
      .member_token as string;
    const ref = `p-${randomUUID()}`;
    await ok(
      m.api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: m.pointsCard, member_id: anaId, purchase_amount: 300, reference: ref },
      }),
    );
    const { reward } = await sys.admin<{ reward: { id: number } }>(
      'POST',
      `/admin/v1/tenants/${m.tenantId}/cards/${m.pointsCard}/rewards`,
      {
        name: 'Mug',
        points_cost: 50,
      },
    );
    await ok(
      m.api('POST', '/api/v1/loyalty/points/redeem', { token, body: { card_id: m.pointsCard, reward_id: reward.id } }),
    );
    await ok(
      m.api('POST', '/api/v1/loyalty/points/refund', {
        body: { card_id: m.pointsCard, member_id: anaId, refund_amount: 10, reference: ref },
      }),
    );
    // points.transferred: Ana gives a friend some of her points.
    const cy = await ok(
      m.api('POST', '/api/v1/auth/member/register', {
        body: { name: 'Cy Hook', email: `cy.${randomUUID()}@example.com`, phone: `+4476${Date.now() % 100_000_000}` },
      }),
    );
    await ok(
      m.api('POST', '/api/v1/loyalty/points/transfer', {
        token,
        body: {
          card_id: m.pointsCard,
          from_member_id: anaId,
          to_member_id: (cy.member as { id: number }).id,
          points: 5,
          reference: `t-${randomUUID()}`,
        },
      }),
    );
    const cref = `c-${randomUUID()}`;
    await ok(
      m.api('POST', '/api/v1/cashback/cashback/earn', {
        body: { card_id: m.cashbackCard, member_id: anaId, purchase_amount: 40, reference: cref },
      }),
    );
    await ok(
      m.api('POST', '/api/v1/cashback/cashback/redeem', { token, body: { card_id: m.cashbackCard, amount: 1 } }),
    );
    await ok(
      m.api('POST', '/api/v1/cashback/cashback/refund', {
        body: { card_id: m.cashbackCard, member_id: anaId, refund_amount: 10, reference: cref },
      }),
    );
    // claim.requested, claim.approved; claim.rejected; claim.expired
    const claim = async () => {
      sys.clock.advance(61_000); // a new code needs the cooldown
      const otp = await ok(
        m.api('POST', '/api/v1/loyalty/claims/request-otp', {
          body: { member_email: email, card_id: m.pointsCard, reward_id: reward.id },
        }),
      );
      const created = await ok(
        m.api('POST', '/api/v1/loyalty/claims', {
          headers: idem(),
          body: { member_email: email, card_id: m.pointsCard, reward_id: reward.id, verification_code: otp.otp_code },
        }),
      );
      return (created.claim_request as { id: number }).id;
    };
    await ok(m.api('POST', `/api/v1/loyalty/claims/${await claim()}/approve`, { headers: idem(), body: {} }));
    await ok(
      m.api('POST', `/api/v1/loyalty/claims/${await claim()}/reject`, {
        headers: idem(),
        body: { staff_note: 'Sold out' },
      }),
    );
    await claim();
    sys.clock.advance(73 * 3600_000); // past the claim lifetime (72 h)
    await (sys.services.claims as RunningService<{ sweep(): Promise<unknown> }>).hooks.sweep();
    // referral.applied and referral.completed (the card pays at once)
    const code = await ok(m.api('GET', `/api/v1/loyalty/cards/${m.pointsCard}/members/${anaId}/referral-code`));
    const bo = await ok(
      m.api('POST', '/api/v1/auth/member/register', {
        body: { name: 'Bo Hook', email: `bo.${randomUUID()}@example.com`, phone: `+4478${Date.now() % 100_000_000}` },
      }),
    );
    await ok(
      m.api('POST', '/api/v1/loyalty/referrals/apply', {
        headers: idem(),
        body: {
          referral_code: code.referral_code,
          card_id: m.pointsCard,
          referee_member_id: (bo.member as { id: number }).id,
        },
      }),
    );
    // rule.budget_exhausted, and a points.earned with rules_applied: a bonus rule of 5 with a budget of 5.
    const { rule } = await sys.admin<{ rule: { id: number } }>(
      'POST',
      `/admin/v1/tenants/${m.tenantId}/cards/${m.pointsCard}/rules`,
      { name: 'Launch bonus', kind: 'fixed', points: 5, budget: 5, status: 'active' },
    );
    const bonus = await ok(
      m.api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: m.pointsCard, member_id: anaId, purchase_amount: 20 },
      }),
    );
    // points.expiring, points.expired, cashback.expiring, cashback.expired: credits on cards that
    // now expire them after 2 days, warned 1 day ahead; the ledger's lot sweep, with the clock moved.
    for (const card of [m.pointsCard, m.cashbackCard])
      await sys.admin('POST', `/admin/v1/tenants/${m.tenantId}/cards/${card}`, {
        expiry_days: 2,
        expiry_warning_days: 1,
      });
    await ok(
      m.api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: m.pointsCard, member_id: anaId, purchase_amount: 12 },
      }),
    );
    await ok(
      m.api('POST', '/api/v1/cashback/cashback/earn', {
        body: { card_id: m.cashbackCard, member_id: anaId, purchase_amount: 30 },
      }),
    );
    const lots = (sys.services.ledger as RunningService<{ sweepLots(): Promise<{ warned: number; expired: number }> }>)
      .hooks;
    sys.clock.advance(24 * 3600_000 + 1_000);
    expect((await lots.sweepLots()).warned).toBeGreaterThanOrEqual(2);
    sys.clock.advance(24 * 3600_000);
    expect((await lots.sweepLots()).expired).toBeGreaterThanOrEqual(2);
    // tier.upgraded (by the recompute of the ladder's members and by a crossing earn), then with
    // the clock moved: tier.downgrade_warning and tier.downgraded for a member who stopped earning,
    // tier.renewed for one who kept earning (the ledger's tier sweep).
    const ladder = await sys.admin<{ recompute_job_id: string | null }>(
      'PUT',
      `/admin/v1/tenants/${m.tenantId}/cards/${m.pointsCard}/tiers`,
      {
        tiers: [
          { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
          { name: 'Silver', rank: 1, entry_threshold: 10, retain_threshold: 5 },
        ],
        window: 'rolling',
        window_days: 2,
        warning_days: 1,
      },
    );
    await eventually(
      async () => (await ok(m.api('GET', `/api/v1/jobs/${ladder.recompute_job_id}`))).status,
      (status) => status === 'succeeded',
      30_000,
    );
    const quitter = await ok(
      m.api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: m.pointsCard, email: `quit.${randomUUID()}@example.com`, purchase_amount: 20 },
      }),
    );
    expect(quitter.tier).toMatchObject({ name: 'Silver', upgraded: true });
    const keeper = { card_id: m.pointsCard, member_id: anaId, purchase_amount: 20 };
    expect((await ok(m.api('POST', '/api/v1/loyalty/points/earn', { body: keeper }))).tier).toMatchObject({
      name: 'Silver',
    });
    const tiers = (sys.services.ledger as RunningService<{ sweepTiers(): Promise<{ warned: number }> }>).hooks;
    sys.clock.advance(24 * 3600_000 + 1_000);
    await ok(m.api('POST', '/api/v1/loyalty/points/earn', { body: keeper }));
    sys.clock.advance(24 * 3600_000);
    expect((await tiers.sweepTiers()).warned).toBeGreaterThanOrEqual(1);
    sys.clock.advance(24 * 3600_000);
    await tiers.sweepTiers();
    // member.erased: another member erased (identity's job asks every service for its part, then says so)
    const gone = await ok(
      m.api('POST', '/api/v1/auth/member/register', {
        body: { name: 'Zed Gone', email: `zed.${randomUUID()}@example.com`, phone: `+4478${Date.now() % 100_000_000}` },
      }),
    );
    const erasure = await m.api('POST', `/api/v1/members/${(gone.member as { id: number }).id}/erase`);
    expect(erasure.status, JSON.stringify(erasure.body)).toBe(202);
    // points.transferred: Ana gives Bo a point, with a code of purpose transfer.
    await sys.admin('POST', `/admin/v1/tenants/${m.tenantId}/cards/${m.pointsCard}`, { transfers_enabled: true });
    const boId = (bo.member as { id: number }).id;
    const transferCode = await ok(
      m.api('POST', '/api/v1/loyalty/points/transfer/request-otp', {
        body: { card_id: m.pointsCard, from_member_id: anaId },
      }),
    );
    await ok(
      m.api('POST', '/api/v1/loyalty/points/transfer', {
        body: {
          card_id: m.pointsCard,
          from_member_id: anaId,
          to_member_id: boId,
          points: 1,
          reference: `gift-${randomUUID()}`,
          verification_code: transferCode.otp_code,
        },
      }),
    );
    // member.merged: a duplicate of Bo merged into Bo (identity's job asks the services, then says so)
    const dup = await ok(
      m.api('POST', '/api/v1/auth/member/register', {
        body: { name: 'Bo Twice', email: `bo2.${randomUUID()}@example.com`, phone: `+4479${Date.now() % 100_000_000}` },
      }),
    );
    const merge = await m.api('POST', `/api/v1/members/${boId}/merge`, {
      body: { source_member_id: (dup.member as { id: number }).id },
    });
    expect(merge.status, JSON.stringify(merge.body)).toBe(202);
    // audit.anchored: the tenant's audit chain (its provisioning, the claims decided above) anchored
    // by identity, as its hourly task does; again until the chain's rows are appended.
    const identity = (sys.services.identity as RunningService<{ anchorAuditChains(): Promise<number> }>).hooks;
    await eventually(
      async () => {
        await identity.anchorAuditChains();
        return mine().filter((r) => r.event.type === 'audit.anchored').length;
      },
      (n) => n > 0,
      30_000,
    );
    const expected = webhookEventNames.filter((t) => t !== 'ping');
    await eventually(
      async () => new Set(mine().map((r) => r.event.type)),
      (types) => expected.every((t) => types.has(t)),
      30_000,
    );
    for (const r of mine()) {
      // Exactly the documented body: nothing missing, nothing more (no internal field leaks).
      const parsed = webhookEnvelopeSchema(r.event.type as WebhookEventName)
        .strict()
        .safeParse(r.event);
      expect(parsed.success, `${r.event.type}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      const strictData = (
        webhookEnvelopeSchema(r.event.type as WebhookEventName).shape.data as unknown as {
          strict(): { safeParse(v: unknown): { success: boolean } };
        }
      ).strict();
      expect(strictData.safeParse(r.event.data).success, `${r.event.type} data: ${JSON.stringify(r.event.data)}`).toBe(
        true,
      );
    }
    const registered = mine().find((r) => r.event.type === 'member.registered' && r.event.data.member_id === anaId)!;
    expect(registered.event.data).toEqual({
      member_id: anaId,
      name: 'Ana Hook',
      email: masked,
      phone: expect.stringMatching(/\*/),
      source: 'registration',
    });
    expect(mine().find((r) => r.event.type === 'rule.budget_exhausted')!.event.data).toEqual({
      rule_id: rule.id,
      card_id: m.pointsCard,
      version: 1,
      name: 'Launch bonus',
      budget: 5,
      member_id: anaId,
      transaction_id: bonus.transaction_id,
    });
    expect(
      mine().find((r) => r.event.type === 'points.earned' && r.event.data.transaction_id === bonus.transaction_id)!
        .event.data,
    ).toMatchObject({
      points: 25,
      rules_applied: [{ rule_id: rule.id, version: 1, name: 'Launch bonus', amount: 5, capped: false }],
    });
    const approved = mine().find((r) => r.event.type === 'claim.approved')!;
    expect(approved.event.data).toMatchObject({ status: 'approved', points_deducted: 50, reward_name: 'Mug' });
    expect(mine().find((r) => r.event.type === 'referral.completed')!.event.data).toMatchObject({
      referrer_id: anaId,
      status: 'completed',
    });
  }, 90_000);
});

describe('API', () => {
  it('creates an endpoint once per Idempotency-Key and shows its secret only then', async () => {
    const m = await merchant(sys);
    const key = idem();
    const body = { url: receiver.url('/idem'), event_types: ['points.earned', 'points.earned'], description: 'CRM' };
    const first = await m.api('POST', '/api/v1/webhooks/endpoints', { body, headers: key });
    const again = await m.api('POST', '/api/v1/webhooks/endpoints', { body, headers: key });
    expect(first.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const created = first.body.data!.endpoint as { id: number; secret: string; event_types: string[] };
    expect(created.event_types).toEqual(['points.earned']);
    const got = await m.api('GET', `/api/v1/webhooks/endpoints/${created.id}`);
    expect(got.body.data!.endpoint).not.toHaveProperty('secret');
    expect(got.body.data!.endpoint).toMatchObject({
      id: created.id,
      description: 'CRM',
      enabled: true,
      failing_since: null,
    });
    const other = await m.api('POST', '/api/v1/webhooks/endpoints', {
      body: { ...body, url: receiver.url('/x') },
      headers: key,
    });
    expect(other.status).toBe(409);
    const list = await m.api('GET', '/api/v1/webhooks/endpoints');
    expect(list.body.data!.endpoints).toHaveLength(1);
  });

  it('changes the URL, types and description, and refuses what is not a URL, an event type or a field it has', async () => {
    const m = await merchant(sys);
    const ep = await endpoint(m.api, receiver.url('/before'));
    const changed = await m.api('PATCH', `/api/v1/webhooks/endpoints/${ep.id}`, {
      body: { url: receiver.url('/after'), event_types: ['claim.approved'], description: null },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.data!.endpoint).toMatchObject({
      url: receiver.url('/after'),
      event_types: ['claim.approved'],
      description: null,
    });
    for (const [body, field] of [
      [{ url: 'ftp://example.com/hook' }, 'url'],
      [{ url: 'https://user:pass@example.com/hook' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'https://example.com/#frag' }, 'url'],
      [{ url: 'https://example.com:0/hook' }, 'url'],
      [{ event_types: ['points.earned', '*'] }, 'event_types'],
      [{ event_types: ['points.minted'] }, 'event_types.0'],
      [{ event_types: [] }, 'event_types'],
      [{}, '(body)'],
      // A misspelt field is refused, naming it, rather than dropped (the endpoint would stay enabled).
      [{ enabeld: false }, 'enabeld'],
      [{ description: 'kept?', evnt_types: ['claim.approved'] }, 'evnt_types'],
    ] as const) {
      const r = await m.api('PATCH', `/api/v1/webhooks/endpoints/${ep.id}`, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect((r.body.error!.fields as { field: string }[]).map((f) => f.field)).toContain(field);
    }
    const after = await m.api('GET', `/api/v1/webhooks/endpoints/${ep.id}`);
    expect(after.body.data!.endpoint).toMatchObject({ enabled: true, description: null });
  });

  it('pings an endpoint: a signed `ping` event, logged as a delivery', async () => {
    const m = await merchant(sys);
    const ep = await endpoint(m.api, receiver.url('/ping'), ['points.earned']);
    const r = await m.api('POST', `/api/v1/webhooks/endpoints/${ep.id}/ping`, { headers: idem() });
    expect(r.status).toBe(200);
    const [hook] = await receiver.waitFor((x) => x.path === '/ping');
    const event = await verify(hook!, ep.secret);
    expect(event).toMatchObject({ type: 'ping', tenant_id: m.tenantId, data: { endpoint_id: ep.id } });
    const [d] = await eventually(
      () => deliveries(m.api, ep.id, '?status=delivered'),
      (x) => x.length === 1,
    );
    expect(d!.event.type).toBe('ping');
  });

  it("answers another tenant's endpoint and delivery ids exactly like missing ones (404)", async () => {
    const a = await merchant(sys);
    const b = await merchant(sys);
    const ep = await endpoint(a.api, receiver.url('/isolated'));
    await a.api('POST', `/api/v1/webhooks/endpoints/${ep.id}/ping`, { headers: idem() });
    const [d] = await eventually(
      () => deliveries(a.api, ep.id),
      (x) => x.length === 1,
    );
    const missing = 9_000_000_000;
    for (const id of [ep.id, missing]) {
      for (const [method, path, opts] of [
        ['GET', `/api/v1/webhooks/endpoints/${id}`, {}],
        ['PATCH', `/api/v1/webhooks/endpoints/${id}`, { body: { description: 'mine now' } }],
        ['DELETE', `/api/v1/webhooks/endpoints/${id}`, {}],
        ['POST', `/api/v1/webhooks/endpoints/${id}/rotate-secret`, { headers: idem() }],
        ['POST', `/api/v1/webhooks/endpoints/${id}/ping`, { headers: idem() }],
        ['GET', `/api/v1/webhooks/endpoints/${id}/deliveries`, {}],
      ] as const) {
        const r = await b.api(method, path, opts);
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(r.body.error).toEqual({ code: 'webhook_endpoint_not_found', message: 'Webhook endpoint not found.' });
      }
    }
    for (const id of [d!.id, missing]) {
      const r = await b.api('POST', `/api/v1/webhooks/deliveries/${id}/redeliver`, { headers: idem() });
      expect(r.status).toBe(404);
      expect(r.body.error).toEqual({ code: 'webhook_delivery_not_found', message: 'Webhook delivery not found.' });
    }
    expect((await b.api('GET', '/api/v1/webhooks/endpoints')).body.data!.endpoints).toEqual([]);
    // A's endpoint is untouched.
    expect((await a.api('GET', `/api/v1/webhooks/endpoints/${ep.id}`)).body.data!.endpoint).toMatchObject({
      description: null,
      enabled: true,
    });
  });

  it('needs the webhooks_manage scope', async () => {
    const t = await sys.tenant({ scopes: ['points_read', 'points_write'] });
    const api = apiClient(sys.url, t);
    const r = await api('GET', '/api/v1/webhooks/endpoints');
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ code: 'insufficient_scope', required_scope: 'webhooks_manage' });
  });

  it('limits the endpoints of a tenant', async () => {
    const m = await merchant(sys);
    for (let i = 0; i < 16; i++) await endpoint(m.api, receiver.url(`/many${i}`));
    const r = await m.api('POST', '/api/v1/webhooks/endpoints', {
      body: { url: receiver.url('/one-more'), event_types: ['*'] },
      headers: idem(),
    });
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'webhook_endpoint_limit', max_endpoints: 16 });
  });

  it('serves the same operations to the operator for any tenant', async () => {
    const m = await merchant(sys);
    const base = `/admin/v1/tenants/${m.tenantId}/webhooks`;
    const { endpoint: created } = await sys.admin<{ endpoint: { id: number; secret: string } }>(
      'POST',
      `${base}/endpoints`,
      {
        url: receiver.url('/operator'),
        event_types: ['*'],
      },
    );
    expect(created.secret).toMatch(/^whsec_/);
    // The merchant sees it.
    expect((await m.api('GET', `/api/v1/webhooks/endpoints/${created.id}`)).status).toBe(200);
    await sys.admin('PATCH', `${base}/endpoints/${created.id}`, { description: 'set by the operator' });
    const { endpoints } = await sys.admin<{ endpoints: { description: string }[] }>('GET', `${base}/endpoints`);
    expect(endpoints[0]!.description).toBe('set by the operator');
    await sys.admin('POST', `${base}/endpoints/${created.id}/ping`);
    const [hook] = await receiver.waitFor((r) => r.path === '/operator');
    const { deliveries: log } = await eventually(
      () =>
        sys.admin<{ deliveries: { id: number; status: string }[] }>(
          'GET',
          `${base}/endpoints/${created.id}/deliveries`,
        ),
      (x) => x.deliveries[0]?.status === 'delivered',
    );
    await sys.admin('POST', `${base}/deliveries/${log[0]!.id}/redeliver`);
    await receiver.waitFor((r) => r.path === '/operator' && r.event.id === hook!.event.id, 2);
    const rotated = await sys.admin<{ endpoint: { secret: string } }>(
      'POST',
      `${base}/endpoints/${created.id}/rotate-secret`,
    );
    expect(rotated.endpoint.secret).not.toBe(created.secret);
    await sys.admin('DELETE', `${base}/endpoints/${created.id}`);
    expect((await m.api('GET', `/api/v1/webhooks/endpoints/${created.id}`)).status).toBe(404);
    // Another tenant's id under this tenant's path is not found; a tenant that does not exist is not found.
    const other = await merchant(sys);
    const theirs = await endpoint(other.api, receiver.url('/theirs'));
    const res = await fetch(`${sys.url}${base}/endpoints/${theirs.id}`, {
      headers: { authorization: `Bearer ${sys.env.OPERATOR_TOKEN}` },
    });
    expect(res.status).toBe(404);
    const none = await fetch(`${sys.url}/admin/v1/tenants/999999999/webhooks/endpoints`, {
      headers: { authorization: `Bearer ${sys.env.OPERATOR_TOKEN}` },
    });
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('tenant_not_found');
  });
});

async function ok(
  p: Promise<{ status: number; body: { data?: Record<string, unknown> } }>,
): Promise<Record<string, unknown>> {
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!;
}
