import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { apply, balance, card, codeOf, earn, eventually, history, member, type Api } from './support.ts';
import { connectAs } from '../../../test/support/nats.ts';

// Exactly-once bonuses: Idempotency-Key, retries and restarts midway, the sweeper, and the
// first-purchase mode fed by the ledger's JetStream events.
let sys: TestSystem;
let tenantId: number;
let api: Api;
let nc: NatsConnection;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'referrals'],
    env: { REFERRAL_SWEEP_INTERVAL_MS: '100', REFERRAL_PAYMENT_RETRY_AFTER_MS: '500' },
  });
  const t = await sys.tenant();
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
});
afterAll(async () => {
  await nc?.close();
  await sys?.stop();
});

async function referralRow(cardId: number, refereeId: number) {
  const { rows } = await sys.db.query<{ id: number; status: string; payment_due_at: Date | null }>(
    `SELECT id, status, payment_due_at FROM referrals.referrals WHERE card_id = $1 AND referee_id = $2`,
    [cardId, refereeId],
  );
  return rows[0];
}

/** Put a referral back in the state a crash leaves: credits made (or not), completion not committed. */
async function uncomplete(cardId: number, refereeId: number, lease: 'held' | 'free') {
  await sys.db.query(
    `UPDATE referrals.referrals SET status = 'pending', completed_at = NULL,
            payment_attempt_at = CASE WHEN $3 = 'held' THEN now() + interval '1 hour' ELSE NULL END
      WHERE card_id = $1 AND referee_id = $2`,
    [cardId, refereeId, lease],
  );
  await sys.db.query(`DELETE FROM referrals.idempotency_keys`);
}

async function pair(cardId: number) {
  const referrer = await member(api);
  const referee = await member(api);
  return { referrer, referee, code: await codeOf(api, cardId, referrer.id) };
}

describe('exactly once', () => {
  let cardId: number;
  beforeAll(async () => {
    cardId = await card(sys, tenantId, { referrer_bonus: 100, referee_bonus: 50 });
  });

  it('replays an apply retried with the same Idempotency-Key and refuses the key with other parameters', async () => {
    const { referrer, referee, code } = await pair(cardId);
    const body = { referral_code: code, card_id: cardId, referee_member_id: referee.id };
    const first = await apply(api, body, 'apply-key-1');
    expect(first.status).toBe(200);
    const again = await apply(api, body, 'apply-key-1');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const other = await member(api);
    const reused = await apply(api, { ...body, referee_member_id: other.id }, 'apply-key-1');
    expect(reused.status).toBe(409);
    expect(reused.body.error).toMatchObject({ code: 'idempotency_key_reused' });
    expect(await balance(api, cardId, referrer.id)).toBe(100);
    expect(await balance(api, cardId, referee.id)).toBe(50);
  });

  it('a retry after a crash between the ledger credits and the completion finishes without paying twice', async () => {
    for (const key of ['crash-retry-key', undefined]) {
      const { referrer, referee, code } = await pair(cardId);
      const body = { referral_code: code, card_id: cardId, referee_member_id: referee.id };
      const first = await apply(api, body, key);
      expect(first.status).toBe(200);
      await uncomplete(cardId, referee.id, 'held');
      const retry = await apply(api, body, key);
      expect(retry.status, JSON.stringify(retry.body)).toBe(200);
      expect(retry.body.data).toEqual(first.body.data);
      expect((await referralRow(cardId, referee.id))?.status).toBe('completed');
      expect(await balance(api, cardId, referrer.id)).toBe(100);
      expect(await balance(api, cardId, referee.id)).toBe(50);
      expect(await history(api, cardId, referee.id)).toHaveLength(1);
      // Once completed, an apply without the key is a second referral.
      expect((await apply(api, body)).status).toBe(409);
    }
  });

  it('a referral left unpaid by a crash right after it was written is paid once by the retry', async () => {
    const { referrer, referee, code } = await pair(cardId);
    // The state after the first transaction of an apply that died before calling the ledger.
    await sys.db.query(
      `INSERT INTO referrals.referrals (tenant_id, card_id, referrer_id, referee_id, code, referrer_bonus, referee_bonus, status, payment_due_at, payment_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, 100, 50, 'pending', now(), now() + interval '1 hour', now())`,
      [tenantId, cardId, referrer.id, referee.id, code],
    );
    const listed = (await api('GET', `/api/v1/loyalty/cards/${cardId}/referrers/${referrer.id}/referrals`)).body
      .data as { referrals: { status: string }[] };
    expect(listed.referrals.map((r) => r.status)).toEqual(['pending']);
    const retry = await apply(api, { referral_code: code, card_id: cardId, referee_member_id: referee.id });
    expect(retry.status).toBe(200);
    expect(retry.body.data!.referral).toMatchObject({
      referrer_id: referrer.id,
      referee_id: referee.id,
      status: 'completed',
    });
    expect(await balance(api, cardId, referrer.id)).toBe(100);
    expect(await balance(api, cardId, referee.id)).toBe(50);
  });

  it('after a restart of the service midway, the sweeper completes the referral and pays nothing twice', async () => {
    const paid = await pair(cardId);
    expect(
      (await apply(api, { referral_code: paid.code, card_id: cardId, referee_member_id: paid.referee.id })).status,
    ).toBe(200);
    const unpaid = await pair(cardId);
    await sys.stopService('referrals');
    // Crash states: one referral credited but not marked completed, one written but never paid.
    await uncomplete(cardId, paid.referee.id, 'free');
    await sys.db.query(
      `INSERT INTO referrals.referrals (tenant_id, card_id, referrer_id, referee_id, code, referrer_bonus, referee_bonus, status, payment_due_at, created_at)
       VALUES ($1, $2, $3, $4, $5, 100, 50, 'pending', now(), now())`,
      [tenantId, cardId, unpaid.referrer.id, unpaid.referee.id, unpaid.code],
    );
    await sys.startService('referrals');
    for (const p of [paid, unpaid]) {
      await eventually(
        () => referralRow(cardId, p.referee.id),
        (r) => r?.status === 'completed',
      );
      expect(await balance(api, cardId, p.referrer.id)).toBe(100);
      expect(await balance(api, cardId, p.referee.id)).toBe(50);
      expect(await history(api, cardId, p.referrer.id)).toEqual([
        expect.objectContaining({ points: 100, event: 'referral_bonus' }),
      ]);
    }
  });
});

describe('bonus on first purchase', () => {
  let cardId: number;
  beforeAll(async () => {
    cardId = await card(sys, tenantId, {
      referrer_bonus: 70,
      referee_bonus: 30,
      referral_bonus_on_first_purchase: true,
    });
  });

  it('keeps the referral pending until the referee first earns points, then pays both once', async () => {
    const { referrer, referee, code } = await pair(cardId);
    const body = { referral_code: code, card_id: cardId, referee_member_id: referee.id };
    const r = await apply(api, body, 'first-purchase-key');
    expect(r.status).toBe(200);
    expect(r.body.message).toMatch(/first purchase/);
    expect(r.body.data!.referral).toMatchObject({
      referrer_id: referrer.id,
      referee_id: referee.id,
      referrer_bonus: 70,
      referee_bonus: 30,
      status: 'pending',
    });
    expect((await apply(api, body, 'first-purchase-key')).body).toEqual(r.body);
    expect((await apply(api, body)).status).toBe(409);
    // Earns of others (the referrer included) do not count.
    const referrerEarned = await earn(api, cardId, referrer.id, 5);
    const bystander = await member(api);
    await earn(api, cardId, bystander.id, 5);
    expect(await balance(api, cardId, referee.id)).toBe(0);
    const referrals = async () =>
      (await api('GET', `/api/v1/loyalty/cards/${cardId}/referrers/${referrer.id}/referrals`)).body.data as {
        referrals: { status: string }[];
      };
    expect((await referrals()).referrals.map((x) => x.status)).toEqual(['pending']);

    const earned = await earn(api, cardId, referee.id, 12);
    await eventually(referrals, (d) => d.referrals[0]?.status === 'completed');
    expect(await balance(api, cardId, referee.id)).toBe(earned + 30);
    expect(await balance(api, cardId, referrer.id)).toBe(referrerEarned + 70);
    expect((await history(api, cardId, referee.id)).map((h) => h.event).sort()).toEqual([
      'referral_bonus',
      'staff_added_points',
    ]);

    // A later earn, and a redelivery of the first earn's event, pay nothing more.
    const later = await earn(api, cardId, referee.id, 8);
    await redeliverLastEvent(`events.ledger.points_earned`);
    expect(await balance(api, cardId, referee.id)).toBe(earned + later + 30);
    expect(await balance(api, cardId, referrer.id)).toBe(referrerEarned + 70);
    const stats = await api('GET', `/api/v1/loyalty/cards/${cardId}/referral-stats`);
    expect(stats.body.data).toEqual({
      stats: { total_referrals: 1, successful_referrals: 1, pending_referrals: 0, conversion_rate: 100 },
      period: 'all',
    });
  });

  it('a redelivered first-purchase event pays nothing twice', async () => {
    const { referrer, referee, code } = await pair(cardId);
    expect((await apply(api, { referral_code: code, card_id: cardId, referee_member_id: referee.id })).status).toBe(
      200,
    );
    const earned = await earn(api, cardId, referee.id, 20);
    await eventually(
      () => referralRow(cardId, referee.id),
      (row) => row?.status === 'completed',
    );
    await redeliverLastEvent('events.ledger.points_earned');
    await redeliverLastEvent('events.ledger.points_earned');
    expect(await balance(api, cardId, referee.id)).toBe(earned + 30);
    expect(await balance(api, cardId, referrer.id)).toBe(70);
  });
});

/**
 * Publish the last event of a subject again under a new message id (so JetStream does not drop
 * it as a duplicate), as a redelivery would, and wait until the referrals consumer has handled it.
 */
async function redeliverLastEvent(suffix: string) {
  const root = sys.env.SUBJECT_ROOT!;
  const subjects = new Subjects(root);
  const jsm = await nc.jetstreamManager();
  const subject = `${root}.${suffix}`;
  const last = await jsm.streams.getMessage(subjects.streamName(), { last_by_subj: subject });
  const ack = await nc.jetstream().publish(subject, last.data, { msgID: `redelivery-${Date.now()}-${Math.random()}` });
  const durable = `${root}-referrals-first-purchase`;
  await eventually(
    () => jsm.consumers.info(subjects.streamName(), durable),
    (info) => info.delivered.stream_seq >= ack.seq && info.num_ack_pending === 0 && info.num_pending === 0,
  );
}
