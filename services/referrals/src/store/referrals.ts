import type { Queryable } from '@loyalty/runtime';
import type { Referral } from '../domain/referral.ts';

const COLUMNS = `id, tenant_id, card_id, referrer_id, referee_id, code, referrer_bonus, referee_bonus, status, payment_due_at, apply_key, created_at, completed_at`;

export interface NewReferral {
  tenantId: number;
  cardId: number;
  referrerId: number;
  refereeId: number;
  code: string;
  referrerBonus: number;
  refereeBonus: number;
  /** null: wait for the referee's first purchase; a time: pay now. */
  paymentDueAt: Date | null;
  /** Idempotency-Key of the apply, when it had one. */
  applyKey: string | null;
  createdAt: Date;
}

/** Insert unless the referee already has a referral on the card; returns undefined then. */
export async function insertReferral(db: Queryable, r: NewReferral): Promise<Referral | undefined> {
  const { rows } = await db.query<Referral>(
    `INSERT INTO referrals.referrals (tenant_id, card_id, referrer_id, referee_id, code, referrer_bonus, referee_bonus, status, payment_due_at, payment_attempt_at, apply_key, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8, $9, $10)
     ON CONFLICT ON CONSTRAINT referrals_one_per_referee DO NOTHING RETURNING ${COLUMNS}`,
    [
      r.tenantId,
      r.cardId,
      r.referrerId,
      r.refereeId,
      r.code,
      r.referrerBonus,
      r.refereeBonus,
      r.paymentDueAt,
      r.applyKey,
      r.createdAt,
    ],
  );
  return rows[0];
}

export async function findByReferee(
  db: Queryable,
  tenantId: number,
  cardId: number,
  refereeId: number,
  lock = false,
): Promise<Referral | undefined> {
  const { rows } = await db.query<Referral>(
    `SELECT ${COLUMNS} FROM referrals.referrals WHERE tenant_id = $1 AND card_id = $2 AND referee_id = $3${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, cardId, refereeId],
  );
  return rows[0];
}

/** A referral waiting for the first purchase becomes due now; returns it when it was waiting. */
export async function markPaymentDue(
  db: Queryable,
  tenantId: number,
  cardId: number,
  refereeId: number,
  now: Date,
): Promise<Referral | undefined> {
  const { rows } = await db.query<Referral>(
    `UPDATE referrals.referrals SET payment_due_at = $4, payment_attempt_at = $4
      WHERE tenant_id = $1 AND card_id = $2 AND referee_id = $3 AND status = 'pending' AND payment_due_at IS NULL
      RETURNING ${COLUMNS}`,
    [tenantId, cardId, refereeId, now],
  );
  return rows[0];
}

/** An account a points earn was made on: (tenant, card, member). */
export interface EarnAccount {
  tenantId: number;
  cardId: number;
  memberId: number;
}

/**
 * For each account, whether its member is the referee of a referral on the card still waiting for
 * a first purchase: one statement for the whole batch (index referrals_one_per_referee).
 */
export async function awaitingFirstPurchase(db: Queryable, accounts: EarnAccount[]): Promise<boolean[]> {
  if (accounts.length === 0) return [];
  const { rows } = await db.query<{ i: number }>({
    name: 'referrals.awaiting_first_purchase',
    text: `SELECT e.i FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS e(tenant_id, card_id, referee_id, i)
            WHERE EXISTS (SELECT 1 FROM referrals.referrals r
                           WHERE r.card_id = e.card_id AND r.referee_id = e.referee_id AND r.tenant_id = e.tenant_id
                             AND r.status = 'pending' AND r.payment_due_at IS NULL)`,
    values: [accounts.map((a) => a.tenantId), accounts.map((a) => a.cardId), accounts.map((a) => a.memberId)],
  });
  const waiting = new Set(rows.map((r) => Number(r.i)));
  return accounts.map((_, k) => waiting.has(k + 1));
}

/** Completed once: a second completion (retry, sweeper, other replica) changes nothing and returns undefined. */
export async function completeReferral(
  db: Queryable,
  id: number,
  tx: { referrer?: number; referee?: number },
  now: Date,
  /** Parties whose bonus was not paid (erased meanwhile): their bonus is recorded as 0. */
  withheld: readonly ('referrer' | 'referee')[] = [],
): Promise<Referral | undefined> {
  const { rows } = await db.query<Referral>(
    `UPDATE referrals.referrals SET status = 'completed', completed_at = $2, referrer_transaction_id = $3, referee_transaction_id = $4,
            referrer_bonus = CASE WHEN 'referrer' = ANY($5::text[]) THEN 0 ELSE referrer_bonus END,
            referee_bonus = CASE WHEN 'referee' = ANY($5::text[]) THEN 0 ELSE referee_bonus END
      WHERE id = $1 AND status = 'pending' AND payment_due_at IS NOT NULL RETURNING ${COLUMNS}`,
    [id, now, tx.referrer ?? null, tx.referee ?? null, withheld],
  );
  return rows[0];
}

export async function findReferral(db: Queryable, id: number): Promise<Referral | undefined> {
  const { rows } = await db.query<Referral>(`SELECT ${COLUMNS} FROM referrals.referrals WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * The sweeper's batch: due referrals whose last payment attempt is older than `staleBefore`
 * (its payer died or failed). Taking them moves their lease, so replicas share the work.
 */
export async function leaseStalePayments(
  db: Queryable,
  staleBefore: Date,
  now: Date,
  limit: number,
): Promise<Referral[]> {
  const { rows } = await db.query<Referral>(
    `UPDATE referrals.referrals SET payment_attempt_at = $2
      WHERE id IN (SELECT id FROM referrals.referrals
                    WHERE status = 'pending' AND payment_due_at IS NOT NULL AND (payment_attempt_at IS NULL OR payment_attempt_at < $1)
                    ORDER BY payment_due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING ${COLUMNS}`,
    [staleBefore, now, limit],
  );
  return rows;
}

// ---- reads for statistics (indexes referrals_card_created and referrals_card_referrer) ----

export async function countReferrals(
  db: Queryable,
  cardId: number,
  since: Date | null,
): Promise<{ total: number; successful: number; pending: number }> {
  const { rows } = await db.query<{ total: number; successful: number; pending: number }>(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE status = 'completed')::int AS successful,
            count(*) FILTER (WHERE status = 'pending')::int AS pending
       FROM referrals.referrals WHERE card_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2)`,
    [cardId, since],
  );
  return rows[0] ?? { total: 0, successful: 0, pending: 0 };
}

export interface ReferrerCount {
  referrer_id: number;
  total: number;
  successful: number;
}

/** Top referrers: by successful referrals, then total, then member id; plus how many referrers there are. */
export async function topReferrers(
  db: Queryable,
  cardId: number,
  since: Date | null,
  limit: number,
): Promise<{ rows: ReferrerCount[]; total: number }> {
  const { rows } = await db.query<ReferrerCount & { referrers: number }>(
    `SELECT referrer_id, total, successful, count(*) OVER ()::int AS referrers
       FROM (SELECT referrer_id, count(*)::int AS total, count(*) FILTER (WHERE status = 'completed')::int AS successful
               FROM referrals.referrals WHERE card_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2)
              GROUP BY referrer_id) per_referrer
      ORDER BY successful DESC, total DESC, referrer_id
      LIMIT $3`,
    [cardId, since, limit],
  );
  return {
    rows: rows.map(({ referrer_id, total, successful }) => ({ referrer_id, total, successful })),
    total: rows[0]?.referrers ?? 0,
  };
}

export interface ReferralOfReferrerRow {
  id: number;
  referee_id: number;
  status: Referral['status'];
  referrer_bonus: number;
  created_at: Date;
}

export async function referralsOfReferrer(
  db: Queryable,
  cardId: number,
  referrerId: number,
  limit: number,
  offset: number,
): Promise<{ rows: ReferralOfReferrerRow[]; total: number }> {
  const [page, count] = await Promise.all([
    db.query<ReferralOfReferrerRow>(
      `SELECT id, referee_id, status, referrer_bonus, created_at FROM referrals.referrals
        WHERE card_id = $1 AND referrer_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
      [cardId, referrerId, limit, offset],
    ),
    db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM referrals.referrals WHERE card_id = $1 AND referrer_id = $2`,
      [cardId, referrerId],
    ),
  ]);
  return { rows: page.rows, total: count.rows[0]?.n ?? 0 };
}
