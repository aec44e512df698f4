import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../scripts/admin-cli.ts';
import { OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../support/system.ts';
import { lotsAgree, pointsCard } from '../support/ledger.ts';
import { checkResponse } from '../support/contract.ts';

/**
 * Bulk imports end to end through the gateway: a 10,000-line members file with planted errors
 * validates to exactly those errors (the job's list and its error file), the corrected file
 * executes, and running it again changes nothing; balances become lots whose accounts agree with
 * the journal; bad uploads are refused with the documented statuses.
 */
let sys: TestSystem;
let creds: { tenantId: number; appId: string; apiKey: string };
const ALL = ['points_read', 'points_write', 'card_read', 'programme_manage'];

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  creds = await sys.tenant({ scopes: ALL });
}, 60_000);
afterAll(async () => {
  await sys?.stop();
});

type Json = { success: boolean; data?: Record<string, unknown>; error?: Record<string, unknown> };
const headers = () => ({ 'X-App-Id': creds.appId, 'X-Api-Key': creds.apiKey });

async function upload(query: string, body: string, type = 'text/csv'): Promise<{ status: number; json: Json }> {
  const r = await fetch(`${sys.url}/api/v1/imports?${query}`, {
    method: 'POST',
    headers: { ...headers(), 'Content-Type': type },
    body,
  });
  return { status: r.status, json: (await r.json()) as Json };
}

async function get(path: string): Promise<{ status: number; json: Json; text: string }> {
  const r = await fetch(`${sys.url}${path}`, { headers: headers() });
  const text = await r.text();
  return {
    status: r.status,
    json: r.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as Json) : { success: true },
    text,
  };
}

/** Poll the import until its status is one of `until`. */
async function settle(id: string, until: string[]): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const r = await get(`/api/v1/imports/${id}`);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    if (until.includes(r.json.data!.status as string)) return r.json.data!;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`import ${id} did not reach ${until.join('/')}`);
}

const run = Date.now().toString(36);
function membersFile(planted: boolean): { text: string; errors: { line: number; column: string }[] } {
  const lines = ['external_id,name,email,phone,joined_at,accepts_emails'];
  const errors: { line: number; column: string }[] = [];
  for (let i = 1; i <= 10_000; i++) {
    let row = `m-${run}-${i},Member ${i},m${i}.${run}@example.com,+35191${String(i).padStart(7, '0')},2024-01-0${(i % 9) + 1},${i % 2 === 0}`;
    if (i === 7)
      row = `m-${run}-${i},"Silva, Ana ""the first""
second line",m${i}.${run}@example.com,,2024-02-01T10:00:00Z,yes`;
    if (planted) {
      if (i === 100) [row] = [row.replace(`m${i}.${run}@example.com`, 'not-an-email')];
      if (i === 2000) row = `m-${run}-${i},,m${i}.${run}@example.com,,2024-01-01,true`;
      if (i === 3000) row = `m-${run}-10,Dup,dup.${run}@example.com,,2024-01-01,true`;
      if (i === 4000) row = row.replace(/,(true|false)$/, ',maybe');
      if (i === 5000) row = `m-${run}-${i},Too,many,fields,here,true,x`;
      if (i === 6000) row = row.replace('2024-01-0', '2999-01-0');
      if (i === 7000) row = row.replace(`+35191${String(i).padStart(7, '0')}`, '12ab');
      if (i === 8000) row = `m-${run}-${i},Copy,m11.${run}@example.com,,2024-01-01,true`;
    }
    lines.push(row);
  }
  if (planted) {
    // Line numbers are physical lines: the quoted name of member 7 spans two.
    const at = (i: number) => (i >= 7 ? i + 2 : i + 1);
    errors.push(
      { line: at(100), column: 'email' },
      { line: at(2000), column: 'name' },
      { line: at(3000), column: 'external_id' },
      { line: at(4000), column: 'accepts_emails' },
      { line: at(5000), column: '(line)' },
      { line: at(6000), column: 'joined_at' },
      { line: at(7000), column: 'phone' },
      { line: at(8000), column: 'email' },
    );
  }
  return { text: `${lines.join('\n')}\n`, errors };
}

describe('members import', () => {
  it('validates to exactly the planted errors, executes the corrected file, and a second run changes nothing', async () => {
    const bad = membersFile(true);
    const created = await upload('kind=members', bad.text);
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const id = created.json.data!.id as string;
    expect(id).toMatch(/^imp_identity_/);
    const invalid = await settle(id, ['invalid', 'validated', 'failed']);
    expect(invalid.status).toBe('invalid');
    expect(invalid.counts).toMatchObject({ lines: 10_000, invalid: 8, valid: 9_992 });
    const job = invalid.validate_job as {
      errors: { line: number; column: string; reason: string }[];
      result_url: string;
    };
    expect(job.errors.map((e) => ({ line: e.line, column: e.column })).sort((a, b) => a.line - b.line)).toEqual(
      bad.errors,
    );
    expect(job.errors.find((e) => e.column === 'external_id')?.reason).toBe(`repeats line 12 of this file`);
    const file = await get(job.result_url);
    expect(file.status).toBe(200);
    expect(file.text.trim().split('\n')).toHaveLength(9);
    expect(file.text.split('\n')[0]).toBe('line,column,reason');
    const refused = await fetch(`${sys.url}/api/v1/imports/${id}/execute`, { method: 'POST', headers: headers() });
    expect(refused.status).toBe(409);

    const good = membersFile(false);
    const first = await upload('kind=members', good.text);
    const firstId = first.json.data!.id as string;
    expect((await settle(firstId, ['validated', 'invalid'])).status).toBe('validated');
    const exec = await fetch(`${sys.url}/api/v1/imports/${firstId}/execute`, { method: 'POST', headers: headers() });
    expect(exec.status).toBe(202);
    const done = await settle(firstId, ['executed', 'failed']);
    expect(done.counts).toMatchObject({ lines: 10_000, valid: 10_000, applied: 10_000, unchanged: 0 });
    const { rows } = await sys.db.query<{ n: string; named: string }>(
      `SELECT count(*)::text AS n, count(*) FILTER (WHERE name = 'Silva, Ana "the first"' || chr(10) || 'second line')::text AS named
         FROM identity.members WHERE tenant_id = $1 AND external_id LIKE $2`,
      [creds.tenantId, `m-${run}-%`],
    );
    expect(rows[0]).toEqual({ n: '10000', named: '1' });

    const again = await upload('kind=members', good.text);
    const againId = again.json.data!.id as string;
    await settle(againId, ['validated']);
    await fetch(`${sys.url}/api/v1/imports/${againId}/execute`, { method: 'POST', headers: headers() });
    const second = await settle(againId, ['executed', 'failed']);
    expect(second.counts).toMatchObject({ applied: 0, unchanged: 10_000 });
    const { rows: after } = await sys.db.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM identity.members WHERE tenant_id = $1',
      [creds.tenantId],
    );
    expect(after[0]!.n).toBe('10000');
  }, 180_000);
});

describe('balances import', () => {
  it('brings balances in as lots, once, and refuses unknown members', async () => {
    const card = await pointsCard(sys, creds.tenantId, { expiry_warning_days: 7 });
    const line = (i: number, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        external_id: `b-${run}-${i}`,
        member_external_id: `m-${run}-${(i % 50) + 1}`,
        points: 10 + i,
        earned_at: '2024-05-01T00:00:00Z',
        ...(i % 3 === 0 ? { expires_at: '2099-01-01T00:00:00Z' } : {}),
        ...(i % 5 === 0 ? { available_at: '2099-01-01T00:00:00Z', expires_at: '2099-06-01T00:00:00Z' } : {}),
        ...extra,
      });
    const rows = Array.from({ length: 300 }, (_, i) => line(i + 1));
    const withErrors = [
      ...rows,
      line(301, { member_external_id: 'nobody' }),
      line(302, { expires_at: '2001-01-01' }),
      '{oops',
    ];
    const badUpload = await upload(`kind=balances&card_id=${card}`, withErrors.join('\n'), 'application/x-ndjson');
    expect(badUpload.status, JSON.stringify(badUpload.json)).toBe(202);
    const invalid = await settle(badUpload.json.data!.id as string, ['invalid', 'validated']);
    const errors = (invalid.validate_job as { errors: { line: number; column: string }[] }).errors;
    expect(errors.map((e) => [e.line, e.column])).toEqual([
      [301, 'member_external_id'],
      [302, 'expires_at'],
      [303, '(line)'],
    ]);

    const { rows: clock } = await sys.db.query<{ now: Date }>('SELECT now() AS now');
    for (const expected of [300, 0]) {
      const ok = await upload(`kind=balances&card_id=${card}`, rows.join('\n'), 'application/jsonl');
      const id = ok.json.data!.id as string;
      expect(id).toMatch(/^imp_ledger_/);
      expect((await settle(id, ['validated', 'invalid'])).status).toBe('validated');
      await fetch(`${sys.url}/api/v1/imports/${id}/execute`, { method: 'POST', headers: headers() });
      const done = await settle(id, ['executed', 'failed']);
      expect(done.counts).toMatchObject({ applied: expected, unchanged: 300 - expected });
    }
    // An executed import takes the planner statistics of the tables it wrote (a bulk load leaves
    // them describing the tables as they were before it).
    const analyzedSince = async (table: string) => {
      const { rows: stat } = await sys.db.query<{ at: Date | null }>(
        `SELECT greatest(last_analyze, last_autoanalyze) AS at FROM pg_stat_user_tables
          WHERE schemaname = 'ledger' AND relname = $1`,
        [table],
      );
      return stat[0]?.at !== null && stat[0]!.at >= clock[0]!.now;
    };
    for (const table of ['journal', 'lots', 'accounts', 'import_keys'])
      await expect.poll(() => analyzedSince(table), { timeout: 5000 }).toBe(true);
    const { rows: sums } = await sys.db.query<{ journal: string; lots: string; pending: string }>(
      `SELECT (SELECT sum(amount) FROM ledger.journal WHERE card_id = $1)::text AS journal,
              (SELECT sum(remaining) FROM ledger.lots WHERE card_id = $1)::text AS lots,
              (SELECT sum(pending) FROM ledger.accounts WHERE card_id = $1)::text AS pending`,
      [card],
    );
    const total = Array.from({ length: 300 }, (_, i) => 10 + i + 1).reduce((a, b) => a + b, 0);
    const waiting = Array.from({ length: 300 }, (_, i) => i + 1)
      .filter((i) => i % 5 === 0)
      .reduce((a, i) => a + 10 + i, 0);
    expect(sums[0]).toEqual({ journal: String(total), lots: String(total), pending: String(waiting) });
    expect(await lotsAgree(sys, card)).toBe(50);
    // Each journal row: the spendable balance after it (a pending lot adds nothing yet), the import
    // and line in its metadata, its lot warned 7 days (the card's setting) before it expires, its key.
    const { rows: rowsOk } = await sys.db.query<Record<string, number>>(
      `SELECT count(*)::int AS n,
              count(*) FILTER (WHERE balance_after = running)::int AS balance_after,
              count(*) FILTER (WHERE metadata->'import'->>'earned_at' = '2024-05-01T00:00:00.000Z'
                                 AND metadata->'import'->>'id' LIKE 'imp_ledger_%'
                                 AND metadata->>'reason' = 'imported balance')::int AS metadata,
              count(*) FILTER (WHERE warn_at IS NOT DISTINCT FROM expires_at - interval '168 hours')::int AS warn_at,
              count(*) FILTER (WHERE key_journal = id)::int AS keys
         FROM (SELECT j.id, j.balance_after, j.metadata, l.warn_at, l.expires_at, k.journal_id AS key_journal,
                      sum(CASE WHEN l.pending THEN 0 ELSE j.amount END) OVER (PARTITION BY j.member_id ORDER BY j.id) AS running
                 FROM ledger.journal j JOIN ledger.lots l ON l.journal_id = j.id
                 JOIN ledger.import_keys k ON k.card_id = j.card_id AND k.kind = 'balances'
                                          AND k.external_id = j.metadata->'import'->>'external_id'
                WHERE j.card_id = $1) x`,
      [card],
    );
    expect(rowsOk[0]).toEqual({ n: 300, balance_after: 300, metadata: 300, warn_at: 300, keys: 300 });
    // The card's report counts the imported balances as issued, and the members they belong to as
    // no more active than before (the programme moved in; they did nothing).
    const report = await fetch(`${sys.url}/api/v1/loyalty/cards/${card}/report?granularity=day`, {
      headers: headers(),
    });
    const figures = (await report.json()) as { data: { totals: { issued: number; active_members: number } } };
    expect(report.status, JSON.stringify(figures)).toBe(200);
    expect(figures.data.totals).toMatchObject({ issued: total, active_members: 0 });
  }, 120_000);
});

/** Validate a file (expecting its errors as [line, column]); when valid, execute it and answer the import. */
async function runFile(query: string, text: string, type: string, errors: [number, string][] = []) {
  const created = await upload(query, text, type);
  expect(created.status, JSON.stringify(created.json)).toBe(202);
  const id = created.json.data!.id as string;
  const checked = await settle(id, ['invalid', 'validated', 'failed']);
  const listed = (checked.validate_job as { errors: { line: number; column: string }[] }).errors;
  expect(listed.map((e) => [e.line, e.column])).toEqual(errors);
  if (errors.length > 0) return checked;
  await fetch(`${sys.url}/api/v1/imports/${id}/execute`, { method: 'POST', headers: headers() });
  return settle(id, ['executed', 'failed']);
}

async function memberIds(prefix: string, n: number): Promise<number[]> {
  const { rows } = await sys.db.query<{ id: string; external_id: string }>(
    'SELECT id::text, external_id FROM identity.members WHERE tenant_id = $1 AND external_id = ANY($2)',
    [creds.tenantId, Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`)],
  );
  const by = new Map(rows.map((r) => [r.external_id, Number(r.id)]));
  return Array.from({ length: n }, (_, i) => by.get(`${prefix}${i + 1}`)!);
}

describe('tiers import', () => {
  it('sets members’ tiers as imported tiers until valid_until, once, with line errors for unknown tiers and members', async () => {
    const bare = await pointsCard(sys, creds.tenantId);
    const noLadder = await upload(`kind=tiers&card_id=${bare}`, 'member_external_id,tier,valid_until\n');
    expect(noLadder.status).toBe(404);
    expect(noLadder.json.error?.code).toBe('tiers_not_configured');
    const card = await pointsCard(sys, creds.tenantId);
    await sys.admin('PUT', `/admin/v1/tenants/${creds.tenantId}/cards/${card}/tiers`, {
      tiers: [
        { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
        { name: 'Silver', rank: 1, entry_threshold: 100, retain_threshold: 80 },
        { name: 'Gold', rank: 2, entry_threshold: 500, retain_threshold: 400 },
      ],
      window: 'calendar_year',
    });
    const until = new Date(sys.clock.now().getTime() + 200 * 86_400_000).toISOString();
    const lines = Array.from({ length: 20 }, (_, i) => `m-${run}-${i + 1},${i % 2 ? 'gold' : 'Silver'},${until}`);
    const header = 'member_external_id,tier,valid_until';
    await runFile(
      `kind=tiers&card_id=${card}`,
      [
        header,
        ...lines,
        `m-${run}-30,Platinum,${until}`,
        `m-${run}-31,Gold,2001-01-01`,
        `nobody-${run},Gold,${until}`,
        `m-${run}-1,Gold,${until}`,
      ].join('\n'),
      'text/csv',
      [
        [22, 'tier'],
        [23, 'valid_until'],
        [24, 'member_external_id'],
        [25, 'member_external_id'],
      ],
    );
    const file = `${[header, ...lines].join('\n')}\n`;
    const done = await runFile(`kind=tiers&card_id=${card}`, file, 'text/csv');
    expect(done.counts).toMatchObject({ lines: 20, valid: 20, applied: 20, unchanged: 0 });
    const ids = await memberIds(`m-${run}-`, 20);
    for (const [i, id] of [ids[0]!, ids[1]!].entries()) {
      const r = await get(`/api/v1/loyalty/cards/${card}/members/${id}/tier`);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.json.data).toMatchObject({
        tier: { name: i ? 'Gold' : 'Silver' },
        valid_until: until,
        manual: { reason: 'imported' },
      });
    }
    const again = await runFile(`kind=tiers&card_id=${card}`, file, 'text/csv');
    expect(again.counts).toMatchObject({ applied: 0, unchanged: 20 });
    const { rows } = await sys.db.query<{ n: string; events: string }>(
      `SELECT (SELECT count(*) FROM ledger.member_tiers WHERE card_id = $1)::text AS n,
              (SELECT count(*) FROM ledger.outbox WHERE subject ~ 'tier_(upgraded|downgraded)$'
                 AND payload::text ~ ('"card_id": ' || $1 || '[^0-9]'))::text AS events`,
      [card],
    );
    expect(rows[0]).toEqual({ n: '20', events: '0' });
  }, 60_000);
});

describe('history import', () => {
  it('shows past transactions after the journal’s rows, changes no balance, once', async () => {
    const card = await pointsCard(sys, creds.tenantId);
    const [ana, bob] = await memberIds(`m-${run}-`, 2);
    const earned = await fetch(`${sys.url}/api/v1/loyalty/points/earn`, {
      method: 'POST',
      headers: { ...headers(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ card_id: card, member_id: ana, purchase_amount: 25, reference: `h-${run}` }),
    });
    expect(earned.status, await earned.clone().text()).toBe(200);
    const types = ['earned', 'redeemed', 'refunded', 'expired', 'adjusted'];
    const line = (i: number, extra: Record<string, unknown> = {}) => {
      const type = types[i % 5]!;
      return JSON.stringify({
        external_id: `h-${run}-${i}`,
        member_external_id: `m-${run}-${i % 4 === 3 ? 2 : 1}`,
        type,
        points: type === 'earned' || type === 'adjusted' ? 10 + i : -(1 + i),
        occurred_at: new Date(Date.UTC(2023, 0, 1 + i)).toISOString(),
        ...extra,
      });
    };
    const good = Array.from({ length: 40 }, (_, i) => line(i + 1));
    await runFile(
      `kind=history&card_id=${card}`,
      [
        ...good,
        line(41, { type: 'bogus' }),
        line(42, { points: 5 }), // redeemed must be negative
        line(43, { occurred_at: '2999-01-01' }),
        line(44, { points: undefined, amount: '-1.50' }),
        line(1),
      ].join('\n'),
      'application/x-ndjson',
      [
        [41, 'type'],
        [42, 'points'],
        [43, 'occurred_at'],
        [44, 'amount'],
        [45, 'external_id'],
      ],
    );
    const done = await runFile(`kind=history&card_id=${card}`, good.join('\n'), 'application/jsonl');
    expect(done.counts).toMatchObject({ lines: 40, applied: 40, unchanged: 0 });
    const mine = Array.from({ length: 40 }, (_, i) => i + 1).filter((i) => i % 4 !== 3);
    const history = await get(`/api/v1/loyalty/points/history?card_id=${card}&member_id=${ana}&limit=100`);
    expect(history.status, history.text).toBe(200);
    const entries = history.json.data!.transactions as {
      id: number;
      points: number;
      event: string;
      created_at: string;
    }[];
    expect(history.json.data!.pagination).toMatchObject({ total: mine.length + 1, has_more: false });
    expect(entries[0]).toMatchObject({ points: 25, event: 'staff_added_points' });
    const expected = [...mine].reverse().map((i) => ({
      points: types[i % 5] === 'earned' || types[i % 5] === 'adjusted' ? 10 + i : -(1 + i),
      event: `imported_${types[i % 5]}`,
      created_at: new Date(Date.UTC(2023, 0, 1 + i)).toISOString(),
    }));
    expect(entries.slice(1).map(({ points, event, created_at }) => ({ points, event, created_at }))).toEqual(expected);
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
    // A page across the journal's end: its last row, then the newest imported ones.
    const page = await get(`/api/v1/loyalty/points/history?card_id=${card}&member_id=${ana}&limit=3&offset=0`);
    expect((page.json.data!.transactions as { event: string }[]).map((e) => e.event)).toEqual([
      'staff_added_points',
      expected[0]!.event,
      expected[1]!.event,
    ]);
    const later = await get(`/api/v1/loyalty/points/history?card_id=${card}&member_id=${ana}&limit=2&offset=3`);
    expect((later.json.data!.transactions as { created_at: string }[]).map((e) => e.created_at)).toEqual([
      expected[2]!.created_at,
      expected[3]!.created_at,
    ]);
    const bobs = await get(`/api/v1/loyalty/points/history?card_id=${card}&member_id=${bob}&limit=100`);
    expect(bobs.json.data!.pagination).toMatchObject({ total: 40 - mine.length });
    const balance = await get(`/api/v1/loyalty/points/balance?card_id=${card}&member_id=${ana}`);
    expect(balance.json.data).toMatchObject({ points_balance: 25 });
    const { rows } = await sys.db.query<{ journal: string; lots: string }>(
      `SELECT (SELECT count(*) FROM ledger.journal WHERE card_id = $1)::text AS journal,
              (SELECT count(*) FROM ledger.lots WHERE card_id = $1)::text AS lots`,
      [card],
    );
    expect(rows[0]).toEqual({ journal: '1', lots: '1' });
    const again = await runFile(`kind=history&card_id=${card}`, good.join('\n'), 'application/jsonl');
    expect(again.counts).toMatchObject({ applied: 0, unchanged: 40 });
    const after = await get(`/api/v1/loyalty/points/history?card_id=${card}&member_id=${ana}&limit=1`);
    expect(after.json.data!.pagination).toMatchObject({ total: mine.length + 1 });
  }, 60_000);
});

describe('impossible dates', () => {
  type Listed = { line: number; column: string; reason: string }[];
  const listed = (checked: Record<string, unknown>) =>
    (checked.validate_job as { errors: Listed }).errors.map((e) => [e.line, e.column, e.reason]);
  const FEB_29 = 'has day 29 of February 2099, which has 28 days';
  const FAR = 'must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z); years run from 0001 to 9999';

  it('are errors of their lines in every kind (a day the month lacks, year 0000, beyond 9999, not a date)', async () => {
    const members = await runFile(
      'kind=members',
      [
        'external_id,name,joined_at',
        `z-${run}-1,Feb30,2022-02-30`,
        `z-${run}-2,Apr31,2021-04-31T10:00:00Z`,
        `z-${run}-3,Year0,0000-01-01`,
        `z-${run}-4,Junk,2024-03-01junk`,
        `z-${run}-5,Offset,2021-04-02T10:00:00+02:00`,
        `z-${run}-6,Day,2024-02-29`,
        `z-${run}-7,Local,2024-03-01T10:00:00`,
        '',
      ].join('\n'),
      'text/csv',
      [
        [2, 'joined_at'],
        [3, 'joined_at'],
        [4, 'joined_at'],
        [5, 'joined_at'],
        [8, 'joined_at'],
      ],
    );
    expect(listed(members)).toEqual([
      [2, 'joined_at', 'has day 30 of February 2022, which has 28 days'],
      [3, 'joined_at', 'has day 31 of April 2021, which has 30 days'],
      [4, 'joined_at', 'has year 0000: years run from 0001 to 9999'],
      [5, 'joined_at', 'must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z)'],
      // A time without its offset would be read in the server's own time zone.
      [
        8,
        'joined_at',
        'must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z) with its offset (Z or +01:00)',
      ],
    ]);
    expect(members.counts).toMatchObject({ lines: 7, invalid: 5, valid: 2 });

    const card = await pointsCard(sys, creds.tenantId);
    const balance = (i: number, extra: Record<string, unknown>) =>
      JSON.stringify({ external_id: `zb-${run}-${i}`, member_external_id: `m-${run}-1`, points: 5, ...extra });
    const balances = await runFile(
      `kind=balances&card_id=${card}`,
      [
        balance(1, { earned_at: '2022-02-30' }),
        balance(2, { available_at: '2021-04-31T10:00:00Z' }),
        balance(3, { expires_at: '+275760-09-13T00:00:00Z' }),
        balance(4, { expires_at: '2099-02-29' }),
        balance(5, { earned_at: '2024-02-29T23:30:00-01:00', expires_at: '2099-02-28' }),
      ].join('\n'),
      'application/x-ndjson',
      [
        [1, 'earned_at'],
        [2, 'available_at'],
        [3, 'expires_at'],
        [4, 'expires_at'],
      ],
    );
    expect(listed(balances)).toEqual([
      [1, 'earned_at', 'has day 30 of February 2022, which has 28 days'],
      [2, 'available_at', 'has day 31 of April 2021, which has 30 days'],
      [3, 'expires_at', FAR],
      [4, 'expires_at', FEB_29],
    ]);

    await sys.admin('PUT', `/admin/v1/tenants/${creds.tenantId}/cards/${card}/tiers`, {
      tiers: [
        { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
        { name: 'Gold', rank: 1, entry_threshold: 500, retain_threshold: 400 },
      ],
      window: 'calendar_year',
    });
    const tiers = await runFile(
      `kind=tiers&card_id=${card}`,
      ['member_external_id,tier,valid_until', `m-${run}-1,Gold,2099-02-29`, `m-${run}-2,Gold,10000-01-01`].join('\n'),
      'text/csv',
      [
        [2, 'valid_until'],
        [3, 'valid_until'],
      ],
    );
    expect(listed(tiers)).toEqual([
      [2, 'valid_until', FEB_29],
      [3, 'valid_until', FAR],
    ]);

    const history = await runFile(
      `kind=history&card_id=${card}`,
      [
        JSON.stringify({
          external_id: `zh-${run}-1`,
          member_external_id: `m-${run}-1`,
          type: 'earned',
          points: 5,
          occurred_at: '0000-01-01T00:00:00Z',
        }),
        JSON.stringify({
          external_id: `zh-${run}-2`,
          member_external_id: `m-${run}-1`,
          type: 'earned',
          points: 5,
          occurred_at: '2023-11-31',
        }),
      ].join('\n'),
      'application/x-ndjson',
      [
        [1, 'occurred_at'],
        [2, 'occurred_at'],
      ],
    );
    expect(listed(history)).toEqual([
      [1, 'occurred_at', 'has year 0000: years run from 0001 to 9999'],
      [2, 'occurred_at', 'has day 31 of November 2023, which has 30 days'],
    ]);
  });
});

describe('unknown columns', () => {
  it('are an error of the lines that give them a value, in every kind', async () => {
    const members = await runFile(
      'kind=members',
      `external_id,name,bogus\nu-${run}-1,A,\nu-${run}-2,B,val\nu-${run}-3,C,  \n`,
      'text/csv',
      [[3, 'bogus']],
    );
    expect(members.counts).toMatchObject({ lines: 3, valid: 2, invalid: 1 });
    const empty = await runFile('kind=members', `external_id,name,bogus\nu-${run}-1,A,\n`, 'text/csv');
    expect(empty.counts).toMatchObject({ lines: 1, applied: 1 });
    const card = await pointsCard(sys, creds.tenantId);
    const line = (i: number, bogus: unknown) =>
      JSON.stringify({ external_id: `ub-${run}-${i}`, member_external_id: `u-${run}-1`, points: 5, bogus });
    const balances = await runFile(
      `kind=balances&card_id=${card}`,
      [line(1, ''), line(2, 'x'), line(3, null)].join('\n'),
      'application/x-ndjson',
      [[2, 'bogus']],
    );
    expect(balances.counts).toMatchObject({ lines: 3, valid: 2, invalid: 1 });
  });
});

describe('NUL characters', () => {
  it('are an error of their line (a value, a JSON key) or of the header, and the import ends invalid', async () => {
    // The header's NUL was written into the error list (an unknown column's name) and the job's
    // checkpoint, which PostgreSQL refused: the step failed on every attempt, the import stayed
    // `validating`.
    const header = await runFile(
      'kind=members',
      `external_id,name,e\u0000mail\nn-${run}-1,A,a.${run}@example.com\n`,
      'text/csv',
      [
        [1, '(header)'],
        [2, 'e\uFFFDmail'],
      ],
    );
    // The header's error counts as a line, as a file without a header does.
    expect(header).toMatchObject({ status: 'invalid', counts: { lines: 2, invalid: 2 } });
    const value = await runFile(
      'kind=members',
      `external_id,name\nn-${run}-2,A\u0000B\nn-${run}-3,"C\u0000"\nn-${run}-4,D\n`,
      'text/csv',
      [
        [2, '(line)'],
        [3, '(line)'],
      ],
    );
    expect(value).toMatchObject({ status: 'invalid', counts: { lines: 3, valid: 1, invalid: 2 } });
    const card = await pointsCard(sys, creds.tenantId);
    const json = await runFile(
      `kind=balances&card_id=${card}`,
      [
        JSON.stringify({ external_id: `nb-${run}-1`, member_external_id: `u-${run}-1`, points: 5, 'x\u0000': 'y' }),
        JSON.stringify({ external_id: `nb-${run}-2\u0000`, member_external_id: `u-${run}-1`, points: 5 }),
        JSON.stringify({ external_id: `nb-${run}-3`, member_email: 'a\u0000@example.com', points: 5 }),
      ].join('\n'),
      'application/x-ndjson',
      [
        [1, '(line)'],
        [2, '(line)'],
        [3, '(line)'],
      ],
    );
    expect(json).toMatchObject({ status: 'invalid', counts: { lines: 3, invalid: 3 } });
  }, 90_000);
});

describe('a column given twice', () => {
  it('is an error of the header (CSV) or of the line (JSON Lines, names case-insensitive), not a value dropped', async () => {
    const csv = await runFile(
      'kind=members',
      `external_id,name,Name,email,,\nt-${run}-1,Ana,Bea,t1.${run}@example.com,,\n`,
      'text/csv',
      [[1, '(header)']],
    );
    expect(csv).toMatchObject({ status: 'invalid' });
    const errors = (csv.validate_job as { errors: { reason: string }[] }).errors;
    expect(errors[0]!.reason).toBe('names the column name twice');
    const json = await runFile(
      'kind=members',
      [
        JSON.stringify({ external_id: `t-${run}-2`, name: 'Ana', Name: 'Bea' }),
        JSON.stringify({ external_id: `t-${run}-3`, name: 'Caio' }),
      ].join('\n'),
      'application/x-ndjson',
      [[1, 'name']],
    );
    expect(json).toMatchObject({ status: 'invalid', counts: { lines: 2, valid: 1, invalid: 1 } });
  });
});

describe('a job that failed for good', () => {
  it('shows its import failed, not validating or executing for ever', async () => {
    // The state a step failing on every attempt leaves (an error the import does not foresee, a
    // NUL in a header did until it was refused): the job failed, the import's row as it was.
    const failing = async (text: string, status: 'validating' | 'executing') => {
      const created = await upload('kind=members', text);
      expect(created.status).toBe(202);
      const id = created.json.data!.id as string;
      await settle(id, ['validated']);
      if (status === 'executing') {
        await fetch(`${sys.url}/api/v1/imports/${id}/execute`, { method: 'POST', headers: headers() });
        await settle(id, ['executed']);
      }
      const column = status === 'validating' ? 'validate_job' : 'execute_job';
      await sys.db.query(
        `UPDATE identity.jobs SET status = 'failed', finished_at = now(),
                errors = '[{"code":"internal_error","message":"Something went wrong on our side."}]'
          WHERE id = (SELECT ${column} FROM identity.imports WHERE id = $1::uuid)`,
        [id.replace(/^imp_identity_/, '')],
      );
      await sys.db.query(`UPDATE identity.imports SET status = $2 WHERE id = $1::uuid`, [
        id.replace(/^imp_identity_/, ''),
        status,
      ]);
      return id;
    };
    const v = await failing(`external_id,name\nf-${run}-1,A\n`, 'validating');
    const seen = await get(`/api/v1/imports/${v}`);
    expect(seen.json.data).toMatchObject({ status: 'failed', validate_job: { status: 'failed' } });
    const refused = await fetch(`${sys.url}/api/v1/imports/${v}/execute`, { method: 'POST', headers: headers() });
    expect(refused.status).toBe(409);
    const x = await failing(`external_id,name\nf-${run}-2,B\n`, 'executing');
    expect((await get(`/api/v1/imports/${x}`)).json.data).toMatchObject({
      status: 'failed',
      execute_job: { status: 'failed' },
    });
  });
});

describe('the errors of an import', () => {
  it('are listed and filed in line order (then column) across the steps of a file larger than one', async () => {
    // 25,000 lines of about 50 bytes: some 1.2 MB, four upload pieces, two validate steps of two pieces.
    const n = 25_000;
    const planted = new Map<number, 'name' | 'email' | 'both' | 'dup'>([
      [2, 'email'],
      [9, 'name'],
      [10, 'both'],
      [11, 'name'],
      [100, 'email'],
      [1000, 'dup'],
      [16_000, 'name'],
      [16_001, 'dup'],
      [24_999, 'both'],
    ]);
    const lines = ['external_id,name,email'];
    const expected: [number, string][] = [];
    for (let i = 1; i <= n; i++) {
      const kind = planted.get(i);
      const id = kind === 'dup' ? `o-${run}-1` : `o-${run}-${i}`;
      const name = kind === 'name' || kind === 'both' ? '' : `Ordered member number ${i}`;
      const mail = kind === 'email' || kind === 'both' ? 'not-an-email' : '';
      lines.push(`${id},${name},${mail}`);
      const line = i + 1;
      if (kind === 'both') expected.push([line, 'email'], [line, 'name']);
      else if (kind === 'dup') expected.push([line, 'external_id']);
      else if (kind) expected.push([line, kind]);
    }
    const text = `${lines.join('\n')}\n`;
    expect(Buffer.byteLength(text)).toBeGreaterThan(2 * 384 * 1024);
    const checked = await runFile('kind=members', text, 'text/csv', expected);
    expect(checked.counts).toMatchObject({ lines: n, invalid: planted.size });
    const file = await get((checked.validate_job as { result_url: string }).result_url);
    expect(
      file.text
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => [Number(l.split(',')[0]), l.split(',')[1]]),
    ).toEqual(expected);
  }, 60_000);
});

describe('bad uploads', () => {
  it('refuse a wrong content type (415), an unknown kind (422), an unknown card (404), a missing card (400), too large (413)', async () => {
    const json = await upload('kind=members', '{}', 'application/json');
    expect(json.status).toBe(415);
    expect(json.json.error?.code).toBe('unsupported_media_type');
    const kind = await upload('kind=points', 'a,b\n');
    expect(kind.status).toBe(422);
    expect(kind.json.error?.code).toBe('unknown_import_kind');
    const card = await upload('kind=balances&card_id=999999', 'external_id\n');
    expect(card.status).toBe(404);
    expect(card.json.error?.code).toBe('card_not_found');
    const noCard = await upload('kind=balances', 'external_id\n');
    expect(noCard.status).toBe(400);
    const noScope = await sys.tenant({ scopes: ['points_read'] });
    const forbidden = await fetch(`${sys.url}/api/v1/imports?kind=members`, {
      method: 'POST',
      headers: { 'X-App-Id': noScope.appId, 'X-Api-Key': noScope.apiKey, 'Content-Type': 'text/csv' },
      body: 'external_id,name\n',
    });
    expect(forbidden.status).toBe(403);
    const big = await new Promise<number>((resolve, reject) => {
      const u = new URL(`${sys.url}/api/v1/imports?kind=members`);
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: `${u.pathname}${u.search}`,
          method: 'POST',
          headers: { ...headers(), 'Content-Type': 'text/csv', 'Content-Length': String(3 * 1024 ** 3) },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write('external_id,name\n');
    });
    expect(big).toBe(413);
    const other = await sys.tenant({ scopes: ALL });
    const mine = await upload('kind=members', 'external_id,name\nx-1,X\n');
    const foreign = await fetch(`${sys.url}/api/v1/imports/${mine.json.data!.id as string}`, {
      headers: { 'X-App-Id': other.appId, 'X-Api-Key': other.apiKey },
    });
    expect(foreign.status).toBe(404);
    expect((await get('/api/v1/imports/imp_ledger_00000000-0000-0000-0000-000000000000')).status).toBe(404);
    expect((await get('/api/v1/imports/nonsense')).status).toBe(404);
  });

  it("refuse the operator's members import for a tenant that does not exist (404 tenant_not_found)", async () => {
    // It was accepted (202), validated, and its execute job failed on the tenant's foreign key.
    const unknown = await fetch(`${sys.url}/admin/v1/tenants/999999/imports?kind=members`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'Content-Type': 'text/csv' },
      body: 'external_id,name,email\nghost-1,Ghost,ghost@example.com\n',
    });
    const body = (await unknown.json()) as Json;
    checkResponse('POST', '/admin/v1/tenants/999999/imports', unknown.status, body);
    expect(unknown.status, JSON.stringify(body)).toBe(404);
    expect(body.error?.code).toBe('tenant_not_found');
    const { rows } = await sys.db.query('SELECT id FROM identity.imports WHERE tenant_id = 999999');
    expect(rows).toEqual([]);
    // A tenant that exists is served as before.
    const known = await fetch(`${sys.url}/admin/v1/tenants/${creds.tenantId}/imports?kind=members`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'Content-Type': 'text/csv' },
      body: 'external_id,name\nop-1,Op\n',
    });
    expect(known.status).toBe(202);
  });
});

describe('the admin CLI', () => {
  it('streams a file in with a progress bar, validates and executes it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'import-'));
    const file = path.join(dir, 'members.csv');
    writeFileSync(
      file,
      `external_id,name,email\ncli-${run}-1,Cli One,cli1.${run}@example.com\ncli-${run}-2,Cli Two,\n`,
    );
    const out: string[] = [];
    const bars: string[] = [];
    const code = await runCli(
      ['import', '--tenant', String(creds.tenantId), '--kind', 'members', '--file', file, '--execute'],
      {
        env: { LOYALTY_URL: sys.url, OPERATOR_TOKEN },
        out: (t) => out.push(t),
        err: (t) => out.push(t),
        fetch,
        progress: (line) => bars.push(line),
      },
    );
    expect(code, out.join('\n')).toBe(0);
    expect(out.join('\n')).toContain('status: executed');
    expect(out.join('\n')).toContain('applied: 2');
    expect(bars.some((b) => b.startsWith('upload'))).toBe(true);
    const bad = path.join(dir, 'bad.csv');
    writeFileSync(bad, `external_id,name\n,No id\n`);
    const refused = await runCli(['import', '--tenant', String(creds.tenantId), '--kind', 'members', '--file', bad], {
      env: { LOYALTY_URL: sys.url, OPERATOR_TOKEN },
      out: (t) => out.push(t),
      err: (t) => out.push(t),
      fetch,
    });
    expect(refused).toBe(1);
    expect(out.join('\n')).toContain('line 2, external_id');
  });
});
