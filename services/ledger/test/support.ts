import { expect } from 'vitest';
import type { TestSystem } from '../../../test/support/system.ts';

export {
  cashbackCard,
  email,
  lotsAgree,
  pointsCard,
  reward,
  signedIn,
  type Api,
} from '../../../test/support/ledger.ts';

/**
 * The account's stored balance and the sum of its journal, straight from the ledger's tables; also
 * checks that the account's entry count (a history's total) equals its number of journal rows.
 */
export async function storedAndJournal(
  sys: Pick<TestSystem, 'db'>,
  cardId: number,
  memberId: number,
): Promise<{ stored: number; journal: number }> {
  const { rows } = await sys.db.query<{ stored: string; journal: string; entries: string; counted: string }>(
    `SELECT (SELECT balance FROM ledger.accounts WHERE card_id = $1 AND member_id = $2)::text AS stored,
            (SELECT entries FROM ledger.accounts WHERE card_id = $1 AND member_id = $2)::text AS entries,
            (SELECT COALESCE(sum(amount), 0) FROM ledger.journal WHERE card_id = $1 AND member_id = $2)::text AS journal,
            (SELECT count(*) FROM ledger.journal WHERE card_id = $1 AND member_id = $2)::text AS counted`,
    [cardId, memberId],
  );
  expect(Number(rows[0]!.entries)).toBe(Number(rows[0]!.counted));
  return { stored: Number(rows[0]!.stored), journal: Number(rows[0]!.journal) };
}

/**
 * Wait until identity has handled every points_earned event the ledger recorded, so no mail is
 * still being sent when the system stops (and counts of mails are final).
 */
export async function notificationsSettled(sys: TestSystem, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sys.db.query<{ recorded: number; handled: number }>(
      `SELECT (SELECT count(*) FROM ledger.outbox WHERE subject LIKE '%.events.ledger.points_earned')::int AS recorded,
              (SELECT count(*) FROM identity.processed_events WHERE consumer = 'identity-mail-ledger-points_earned')::int AS handled`,
    );
    if (rows[0]!.handled >= rows[0]!.recorded) return;
    if (Date.now() > deadline)
      throw new Error(`identity handled ${rows[0]!.handled} of ${rows[0]!.recorded} points_earned events`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** An account's journal rows, oldest first, straight from the ledger's table. */
export async function journalOf(
  sys: TestSystem,
  cardId: number,
  memberId: number,
): Promise<{ event: string; amount: number; reference: string | null }[]> {
  const { rows } = await sys.db.query<{ event: string; amount: string; reference: string | null }>(
    'SELECT event, amount::text, reference FROM ledger.journal WHERE card_id = $1 AND member_id = $2 ORDER BY id',
    [cardId, memberId],
  );
  return rows.map((r) => ({ event: r.event, amount: Number(r.amount), reference: r.reference }));
}
