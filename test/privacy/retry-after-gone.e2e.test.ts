import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { privacyTenant, register, type PrivacyTenant } from './support.ts';

/**
 * A retry of a write that happened, after its member left (merged into another, or erased): the
 * client sent an earn or a refund, lost the answer (a timeout), and retries with the same
 * Idempotency-Key after the member became a tombstone. The retry answers the first answer, as any
 * repeat does; a new write naming the tombstone is 404. Found by the soak: the retry was told
 * 404 member_not_found for an earn whose points had been credited (and moved by the merge).
 */
let sys: TestSystem;
let t: PrivacyTenant;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] });
  t = await privacyTenant(sys);
}, 180_000);
afterAll(async () => {
  await t?.receiver.stop();
  await sys?.stop();
});

for (const leave of ['merge', 'erase'] as const) {
  it(`answers a repeated earn or refund key with the first answer after ${leave === 'merge' ? 'a merge' : 'an erasure'}; a new write is 404`, async () => {
    const member = await register(t.api, 'Gone');
    const target = await register(t.api, 'Kept');
    const earnKey = { 'idempotency-key': `earn-${leave}-${member.id}` };
    const earnBody = { card_id: t.pointsCard, member_id: member.id, purchase_amount: 50, reference: `p-${member.id}` };
    const earned = await t.api('POST', '/api/v1/loyalty/points/earn', { body: earnBody, headers: earnKey });
    expect(earned.status, JSON.stringify(earned.body)).toBe(200);
    const refundKey = { 'idempotency-key': `refund-${leave}-${member.id}` };
    const refundBody = { card_id: t.pointsCard, member_id: member.id, refund_amount: 10, reference: `p-${member.id}` };
    const refunded = await t.api('POST', '/api/v1/loyalty/points/refund', { body: refundBody, headers: refundKey });
    expect(refunded.status, JSON.stringify(refunded.body)).toBe(200);

    const gone =
      leave === 'merge'
        ? await t.api('POST', `/api/v1/members/${target.id}/merge`, { body: { source_member_id: member.id } })
        : await t.api('POST', `/api/v1/members/${member.id}/erase`);
    expect(gone.status, JSON.stringify(gone.body)).toBe(202);
    // (the merge's own member_merged row is written by its job, in the background)
    const journalBefore = await sys.db.query(
      "SELECT count(*)::int AS n FROM ledger.journal WHERE member_id = $1 AND event <> 'member_merged'",
      [member.id],
    );

    const earnAgain = await t.api('POST', '/api/v1/loyalty/points/earn', { body: earnBody, headers: earnKey });
    expect(earnAgain.status, JSON.stringify(earnAgain.body)).toBe(200);
    expect(earnAgain.body).toEqual(earned.body);
    const refundAgain = await t.api('POST', '/api/v1/loyalty/points/refund', { body: refundBody, headers: refundKey });
    expect(refundAgain.status, JSON.stringify(refundAgain.body)).toBe(200);
    expect(refundAgain.body).toEqual(refunded.body);

    // Anything new naming the member is refused, with or without a key; nothing was written.
    const fresh = await t.api('POST', '/api/v1/loyalty/points/earn', {
      body: { ...earnBody, reference: `new-${member.id}` },
      headers: { 'idempotency-key': `new-${leave}-${member.id}` },
    });
    expect(fresh.status).toBe(404);
    expect(fresh.body.error!.code).toBe('member_not_found');
    const unkeyed = await t.api('POST', '/api/v1/loyalty/points/refund', { body: refundBody });
    expect(unkeyed.status).toBe(404);
    const journalAfter = await sys.db.query(
      "SELECT count(*)::int AS n FROM ledger.journal WHERE member_id = $1 AND event <> 'member_merged'",
      [member.id],
    );
    expect(journalAfter.rows[0].n).toBe(journalBefore.rows[0].n);
  });
}
