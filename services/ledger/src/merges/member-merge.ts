import type { z } from 'zod';
import { AppError, type MergeMemberDataRequest } from '@loyalty/contracts';
import { PeriodicTask, withTransaction, type Logger, type PoolClient, type Queryable } from '@loyalty/runtime';
import type { Accounting, LedgerDeps, LedgerMeta } from '../accounting.ts';
import { MAX_BALANCE } from '../domain/money.ts';
import { appendJournal, type AccountKey } from '../store/accounts.ts';

type MergeRequest = z.output<typeof MergeMemberDataRequest>;

/** How long after a merge its source's accounts are watched for a stranded credit (sweepStranded). */
const STRANDED_WINDOW_MS = 86_400_000;

/** The member a merged source now is (the target of its merge), or the member itself. */
export async function mergedInto(db: Queryable, tenantId: number, memberId: number): Promise<number> {
  const { rows } = await db.query<{ target_member_id: number }>(
    'SELECT target_member_id FROM ledger.merged_members WHERE source_member_id = $1 AND tenant_id = $2',
    [memberId, tenantId],
  );
  return rows[0] ? Number(rows[0].target_member_id) : memberId;
}

/**
 * The ledger's part of a member merge: every account of the source moves to the target on the same
 * card. Both accounts are locked (the lower member id first) and settled; the source's lots that
 * still hold something (spendable or pending, or lent to a held hold) become the target's with all
 * their dates, its held holds follow them, the amounts move, and each side gets one `member_merged`
 * journal row (the source's negative, the target's positive) carrying spendable + pending + held.
 * A redemption racing it waits for the source's row lock and finds either the points or nothing.
 * Idempotent by state: a repeated request finds empty accounts and writes nothing more.
 */
export class MemberMerges {
  constructor(
    private readonly deps: LedgerDeps,
    private readonly books: Accounting,
  ) {}

  async merge(d: MergeRequest, meta: LedgerMeta) {
    if (d.source_member_id === d.target_member_id)
      throw new AppError('validation_error', 'A member cannot be merged into itself.', {
        fields: [{ field: 'target_member_id', message: 'must differ from source_member_id' }],
      });
    const moved = await withTransaction(this.deps.pool, async (db) => {
      const at = this.deps.clock.now();
      await db.query(
        `INSERT INTO ledger.merged_members (tenant_id, source_member_id, target_member_id, merged_at)
         VALUES ($1, $2, $3, $4) ON CONFLICT (source_member_id) DO NOTHING`,
        [meta.tenant_id, d.source_member_id, d.target_member_id, at],
      );
      const { rows } = await db.query<{ card_id: number }>(
        'SELECT card_id FROM ledger.accounts WHERE tenant_id = $1 AND member_id = $2 ORDER BY card_id',
        [meta.tenant_id, d.source_member_id],
      );
      let accounts = 0;
      let amount = 0;
      let holds = 0;
      for (const { card_id } of rows) {
        const k = (memberId: number): AccountKey => ({ tenantId: meta.tenant_id, cardId: card_id, memberId });
        const one = await this.mergeAccount(db, k(d.source_member_id), k(d.target_member_id), at);
        if (one.amount > 0) accounts++;
        amount += one.amount;
        holds += one.holds;
      }
      return { accounts, amount, holds };
    });
    // Identity broadcast the source's tombstone; this replica forgets it at once either way.
    this.deps.members.forget(meta.tenant_id, d.source_member_id);
    return { moved };
  }

  /**
   * What a credit still left on a source after its merge, moved to the target as the merge moves
   * it. The posting statement refuses credits for a merged source (store/accounts.ts); the one it
   * cannot see is a credit that opened the source's first account on a card while the merge was
   * committing (the statement began before the merge's row was there). Merges of the last day
   * are looked at; each account found is merged again in its own transaction (idempotent by
   * state: an account emptied meanwhile moves nothing). Answers how many accounts moved.
   */
  async sweepStranded(): Promise<number> {
    const now = this.deps.clock.now();
    const { rows } = await this.deps.pool.query<{
      tenant_id: number;
      card_id: number;
      source_member_id: number;
      target_member_id: number;
    }>(
      `SELECT m.tenant_id, a.card_id, m.source_member_id, m.target_member_id
         FROM ledger.merged_members m
         JOIN ledger.cards c ON c.tenant_id = m.tenant_id
         JOIN ledger.accounts a ON a.card_id = c.id AND a.member_id = m.source_member_id
        WHERE m.merged_at > $1 AND a.balance + a.pending + a.held > 0
        LIMIT 100`,
      [new Date(now.getTime() - STRANDED_WINDOW_MS)],
    );
    let moved = 0;
    for (const r of rows) {
      const k = (memberId: number): AccountKey => ({
        tenantId: Number(r.tenant_id),
        cardId: Number(r.card_id),
        memberId: Number(memberId),
      });
      const one = await withTransaction(this.deps.pool, (db) =>
        this.mergeAccount(db, k(r.source_member_id), k(r.target_member_id), this.deps.clock.now()),
      );
      if (one.amount > 0) moved++;
    }
    return moved;
  }

  /** The sweep of stranded credits as a task of every replica (each account moves under its row locks). */
  sweeper(intervalMs: number, log: Logger): PeriodicTask<number> {
    return new PeriodicTask({ name: 'merge-sweep', intervalMs, run: () => this.sweepStranded(), log });
  }

  /** One card: lock, settle, move lots and holds, amounts and the two journal rows. */
  private async mergeAccount(
    db: PoolClient,
    source: AccountKey,
    target: AccountKey,
    at: Date,
  ): Promise<{ amount: number; holds: number }> {
    const [first, second] = source.memberId < target.memberId ? [source, target] : [target, source];
    const a = await this.books.settleLocked(db, first, at, first === target);
    const b = await this.books.settleLocked(db, second, at, second === target);
    const from = first === source ? a : b;
    const into = first === target ? a : b;
    if (!from || !into) throw new Error('an account of a merge is missing');
    const total = from.balance + from.pending + from.held;
    // Marked under the lock: a credit waiting on it finds the mark and writes nothing (store/accounts.ts).
    await db.query(
      'UPDATE ledger.accounts SET merged_into = $3 WHERE card_id = $1 AND member_id = $2 AND merged_into IS NULL',
      [source.cardId, source.memberId, target.memberId],
    );
    if (total === 0) return { amount: 0, holds: 0 };
    if (into.balance + into.pending + into.held + total > MAX_BALANCE)
      throw new AppError('balance_limit_exceeded', 'The merged balance would pass the maximum balance.', {
        max_balance: MAX_BALANCE,
        card_id: source.cardId,
      });
    const held = await db.query<{ id: number }>(
      `SELECT id FROM ledger.holds WHERE card_id = $1 AND member_id = $2 AND status = 'held'`,
      [source.cardId, source.memberId],
    );
    const holdIds = held.rows.map((h) => Number(h.id));
    await db.query(
      `UPDATE ledger.lots SET member_id = $3
        WHERE card_id = $1 AND member_id = $2
          AND (remaining > 0 OR id IN (SELECT lot_id FROM ledger.hold_lots WHERE hold_id = ANY($4::bigint[])))`,
      [source.cardId, source.memberId, target.memberId, holdIds],
    );
    await db.query(`UPDATE ledger.holds SET member_id = $2 WHERE id = ANY($1::bigint[])`, [holdIds, target.memberId]);
    await db.query(
      `UPDATE ledger.accounts SET balance = 0, pending = 0, held = 0, next_change_at = NULL, updated_at = $3
        WHERE card_id = $1 AND member_id = $2`,
      [source.cardId, source.memberId, at],
    );
    await db.query(
      `UPDATE ledger.accounts SET balance = balance + $3, pending = pending + $4, held = held + $5, updated_at = $7,
              next_change_at = CASE WHEN $6::timestamptz IS NULL THEN next_change_at
                                    ELSE LEAST(COALESCE(next_change_at, $6::timestamptz), $6::timestamptz) END
        WHERE card_id = $1 AND member_id = $2`,
      [target.cardId, target.memberId, from.balance, from.pending, from.held, from.next_change_at, at],
    );
    const merge = { source_member_id: source.memberId, target_member_id: target.memberId };
    await appendJournal(db, source, { event: 'member_merged', amount: -total, balanceAfter: 0, metadata: merge, at });
    await appendJournal(db, target, {
      event: 'member_merged',
      amount: total,
      balanceAfter: into.balance + from.balance,
      metadata: merge,
      at,
    });
    return { amount: total, holds: holdIds.length };
  }
}
