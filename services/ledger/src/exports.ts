import { AppError } from '@loyalty/contracts';
import {
  sqlExportPage,
  Exports,
  type ExportColumn,
  type ExportKey,
  type ExportRequest,
  type ExportSource,
  type Pool,
  type ServiceRuntime,
  type SourcePage,
} from '@loyalty/runtime';
import { z } from 'zod';

/**
 * The ledger's exports: the journal, balances (accounts) and lots of a tenant, card after card
 * (or of one card), each card's rows in the order of a unique key read by keyset, with amounts in
 * the card's unit (points, or currency units with two decimals on a cashback card). The journal
 * and lots are read by (card, created_at, id) indexes, so a time range is a range of the index.
 */
interface CardUnit {
  id: number;
  cashback: boolean;
}

/** An amount in the card's unit: points as they are, cents as currency units with two decimals. */
const unitOf =
  (card: CardUnit) =>
  (name: string, sql: string): ExportColumn => ({ name, sql, type: card.cashback ? 'cents' : 'number' });

interface Table {
  columns: string[];
  /** The columns of one card's rows. */
  columnsOf(card: CardUnit): ExportColumn[];
  from: string;
  /** The card's rows in the range: `$1` the card, `$2` from, `$3` to. */
  where: string;
  keys: ExportKey[];
  /** Balances are as they stand now: no range. */
  ranged: boolean;
}

const journal: Table = {
  columns: [
    'id',
    'card_id',
    'member_id',
    'event',
    'amount',
    'balance_after',
    'purchase_amount',
    'reference',
    'reward_id',
    'metadata',
    'created_at',
  ],
  columnsOf: (card) => {
    const unit = unitOf(card);
    return [
      { name: 'id', sql: 'j.id', type: 'number' },
      { name: 'card_id', sql: 'j.card_id', type: 'number' },
      { name: 'member_id', sql: 'j.member_id', type: 'number' },
      { name: 'event', sql: 'j.event', type: 'text' },
      unit('amount', 'j.amount'),
      unit('balance_after', 'j.balance_after'),
      { name: 'purchase_amount', sql: 'j.purchase_cents', type: 'cents' },
      { name: 'reference', sql: 'j.reference', type: 'text' },
      { name: 'reward_id', sql: 'j.reward_id', type: 'number' },
      { name: 'metadata', sql: 'j.metadata', type: 'json' },
      { name: 'created_at', sql: 'j.created_at', type: 'time' },
    ];
  },
  from: 'ledger.journal j',
  where: 'j.card_id = $1 AND j.created_at >= $2 AND j.created_at < $3',
  keys: [
    { sql: 'j.created_at', type: 'timestamptz' },
    { sql: 'j.id', type: 'bigint' },
  ],
  ranged: true,
};

const lots: Table = {
  columns: [
    'id',
    'card_id',
    'member_id',
    'journal_id',
    'amount',
    'remaining',
    'pending',
    'available_at',
    'expires_at',
    'expired_at',
    'created_at',
  ],
  columnsOf: (card) => {
    const unit = unitOf(card);
    return [
      { name: 'id', sql: 'l.id', type: 'number' },
      { name: 'card_id', sql: 'l.card_id', type: 'number' },
      { name: 'member_id', sql: 'l.member_id', type: 'number' },
      { name: 'journal_id', sql: 'l.journal_id', type: 'number' },
      unit('amount', 'l.amount'),
      unit('remaining', 'l.remaining'),
      { name: 'pending', sql: 'l.pending', type: 'boolean' },
      { name: 'available_at', sql: 'l.available_at', type: 'time' },
      { name: 'expires_at', sql: 'l.expires_at', type: 'time' },
      { name: 'expired_at', sql: 'l.expired_at', type: 'time' },
      { name: 'created_at', sql: 'l.created_at', type: 'time' },
    ];
  },
  from: 'ledger.lots l',
  where: 'l.card_id = $1 AND l.created_at >= $2 AND l.created_at < $3',
  keys: [
    { sql: 'l.created_at', type: 'timestamptz' },
    { sql: 'l.id', type: 'bigint' },
  ],
  ranged: true,
};

const balances: Table = {
  columns: ['card_id', 'member_id', 'balance', 'pending', 'held', 'entries', 'opened_at', 'updated_at'],
  columnsOf: (card) => {
    const unit = unitOf(card);
    return [
      { name: 'card_id', sql: 'a.card_id', type: 'number' },
      { name: 'member_id', sql: 'a.member_id', type: 'number' },
      unit('balance', 'a.balance'),
      unit('pending', 'a.pending'),
      unit('held', 'a.held'),
      { name: 'entries', sql: 'a.entries', type: 'number' },
      { name: 'opened_at', sql: 'a.created_at', type: 'time' },
      { name: 'updated_at', sql: 'a.updated_at', type: 'time' },
    ];
  },
  from: 'ledger.accounts a',
  // $2 and $3 are not used: balances are as they stand.
  where: 'a.card_id = $1 AND $2::timestamptz IS NOT NULL AND $3::timestamptz IS NOT NULL',
  keys: [{ sql: 'a.member_id', type: 'bigint' }],
  ranged: false,
};

/** Where a ledger export is: the card it reads and the last key read on it (null: from its first row). */
const State = z.object({ card: z.number().int(), after: z.array(z.string()).nullable() });

/** Stop filling a page across cards when less than this is left of it (a row is far smaller). */
const PAGE_SLACK = 16 * 1024;

function tableSource(pool: Pool, table: Table): ExportSource {
  const cardsOf = async (req: ExportRequest): Promise<CardUnit[]> => {
    const { rows } = await pool.query<{ id: string; reward_system: string }>(
      `SELECT id::text, reward_system FROM ledger.cards
        WHERE tenant_id = $1 AND ($2::bigint IS NULL OR id = $2) ORDER BY id`,
      [req.tenantId, req.cardId],
    );
    return rows.map((r) => ({ id: Number(r.id), cashback: r.reward_system === 'cashback' }));
  };
  return {
    columns: table.columns,
    async check(req) {
      if (!table.ranged && req.ranged)
        throw new AppError('validation_error', 'Invalid request: from, to.', {
          fields: [{ field: 'from', message: 'balances are as they stand now: from and to do not apply' }],
        });
      if (req.cardId !== null && (await cardsOf(req)).length === 0) throw new AppError('card_not_found');
    },
    async page(req, state, limits): Promise<SourcePage> {
      const cards = await cardsOf(req);
      const at = state === undefined ? undefined : State.parse(state);
      let i = at === undefined ? 0 : cards.findIndex((c) => c.id >= at.card);
      if (i < 0) i = cards.length;
      let after = at !== undefined && cards[i]?.id === at.card ? at.after : null;
      let text = '';
      let rows = 0;
      let bytes = 0;
      for (let card = cards[i]; card; card = cards[i]) {
        const page = await sqlExportPage(pool, {
          columns: table.columnsOf(card),
          format: req.format,
          from: table.from,
          where: table.where,
          params: [card.id, req.from ?? '-infinity', req.to],
          keys: table.keys,
          after,
          maxRows: limits.maxRows - rows,
          maxBytes: limits.maxBytes - bytes,
        });
        text += page.text;
        rows += page.rows;
        bytes += Buffer.byteLength(page.text);
        if (page.more) return { text, rows, state: { card: card.id, after: page.last }, done: false };
        i += 1;
        after = null;
        if (limits.maxBytes - bytes < PAGE_SLACK || rows >= limits.maxRows) break;
      }
      const next = cards[i];
      return next
        ? { text, rows, state: { card: next.id, after: null }, done: false }
        : { text, rows, state: null, done: true };
    },
  };
}

/** The ledger's export sources and the jobs that store them as files. */
export function ledgerExports(
  rt: ServiceRuntime,
  tenantMustExist: (tenantId: number, requestId: string) => Promise<void>,
): Exports {
  return new Exports({
    pool: rt.pool,
    tenantMustExist,
    service: 'ledger',
    jobs: rt.jobs,
    clock: rt.clock,
    sources: {
      journal: tableSource(rt.pool, journal),
      balances: tableSource(rt.pool, balances),
      lots: tableSource(rt.pool, lots),
    },
  });
}
