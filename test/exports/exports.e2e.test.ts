import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { callPage } from '@loyalty/runtime';
import { runCli } from '../../scripts/admin-cli.ts';
import { connectAs } from '../support/nats.ts';
import { signIn } from '../support/staff.ts';
import { apiClient, OPERATOR_TOKEN, staffClient, startTestSystem, type TestSystem } from '../support/system.ts';
import { cashbackCard, email, pointsCard } from '../support/ledger.ts';
import { checkResponse } from '../support/contract.ts';

/**
 * Exports end to end through the gateway: the journal streamed as JSON Lines and as CSV equals the
 * journal read with SQL row for row (several pages, awkward text in references and metadata), the
 * card and time filters select exactly the rows SQL selects, members, balances and lots equal their
 * tables, bad requests answer the failure envelope, and the job form's file is the streamed one.
 */
let sys: TestSystem;
let creds: { tenantId: number; appId: string; apiKey: string };
let other: { tenantId: number; appId: string; apiKey: string };
let points: number;
let cashback: number;
let foreignCard: number;
const ALL = ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read', 'programme_manage'];
/** Rows written with SQL beside those written through the API: more than one page of the stream. */
const SEEDED = 6_000;

type Row = Record<string, unknown>;
const headers = (c = creds) => ({ 'X-App-Id': c.appId, 'X-Api-Key': c.apiKey });

async function download(path: string, c = creds) {
  const r = await fetch(`${sys.url}${path}`, { headers: headers(c) });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text };
}

const jsonLines = (text: string): Row[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Row);

/** RFC 4180, written here apart from the platform's own reader: quoted fields, doubled quotes, CRLF. */
function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += ch;
  }
  expect(field, 'the file ends with CRLF').toBe('');
  return rows;
}

/** The journal as SQL reads it, in the export's order (card, time, id), as the export writes each row. */
async function journalFromSql(where: string, params: unknown[]): Promise<Row[]> {
  const { rows } = await sys.db.query<Record<string, string | null> & { metadata: unknown; created_at: Date }>(
    `SELECT j.id::text, j.card_id::text, j.member_id::text, j.event, j.amount::text, j.balance_after::text,
            j.purchase_cents::text, j.reference, j.reward_id::text, j.metadata, j.created_at, c.reward_system
       FROM ledger.journal j JOIN ledger.cards c ON c.id = j.card_id
      WHERE ${where} ORDER BY j.card_id, j.created_at, j.id`,
    params,
  );
  return rows.map((r) => {
    const unit = (v: string | null | undefined) =>
      v === null || v === undefined ? null : r.reward_system === 'cashback' ? Number(v) / 100 : Number(v);
    return {
      id: Number(r.id),
      card_id: Number(r.card_id),
      member_id: Number(r.member_id),
      event: r.event,
      amount: unit(r.amount),
      balance_after: unit(r.balance_after),
      purchase_amount: r.purchase_cents === null ? null : Number(r.purchase_cents) / 100,
      reference: r.reference,
      reward_id: r.reward_id === null ? null : Number(r.reward_id),
      metadata: r.metadata,
      created_at: r.created_at.getTime(),
    };
  });
}

/** An exported journal row in the same shape (times to the millisecond, as JavaScript reads them back). */
function comparable(row: Row): Row {
  expect(String(row.created_at)).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  return { ...row, created_at: Date.parse(String(row.created_at)) };
}

/** A CSV journal row read back as the JSON Lines row it stands for. */
function fromCsv(header: string[], values: string[]): Row {
  const v = Object.fromEntries(header.map((h, i) => [h, values[i]!]));
  const num = (s: string) => (s === '' ? null : Number(s));
  return {
    id: num(v.id!),
    card_id: num(v.card_id!),
    member_id: num(v.member_id!),
    event: v.event,
    amount: num(v.amount!),
    balance_after: num(v.balance_after!),
    purchase_amount: num(v.purchase_amount!),
    reference: v.reference === '' ? null : v.reference,
    reward_id: num(v.reward_id!),
    metadata: v.metadata === '' ? null : JSON.parse(v.metadata!),
    created_at: v.created_at,
  };
}

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  creds = await sys.tenant({ scopes: ALL });
  other = await sys.tenant({ scopes: ALL });
  points = await pointsCard(sys, creds.tenantId);
  cashback = await cashbackCard(sys, creds.tenantId);
  foreignCard = await pointsCard(sys, other.tenantId);
  const api = apiClient(sys.url, creds);
  const foreignApi = apiClient(sys.url, other);
  sys.clock.advance(Date.parse('2031-01-10T09:00:00Z') - sys.clock.now().getTime());
  // Through the API: members (one with a name that needs quoting), earns on both cards a day apart.
  const reg = await api('POST', '/api/v1/auth/member/register', {
    body: {
      name: 'Reis, "Caio"',
      email: email('exp'),
      phone: `+1555${String(Date.now()).slice(-7)}`,
      accepts_emails: true,
    },
  });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  const caio = (reg.body.data!.member as { id: number }).id;
  for (let day = 0; day < 6; day++) {
    for (const [card, amount] of [
      [points, 20 + day],
      [cashback, 30 + day],
    ] as const) {
      const path = card === points ? '/api/v1/loyalty/points/earn' : '/api/v1/cashback/cashback/earn';
      const r = await api('POST', path, {
        body: { card_id: card, member_id: caio, purchase_amount: amount, reference: `ref,${day}"${card}` },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const w = await api('POST', path, { body: { card_id: card, email: email('walkin'), purchase_amount: amount } });
      expect(w.status, JSON.stringify(w.body)).toBe(200);
    }
    sys.clock.advance(86_400_000);
  }
  const f = await foreignApi('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: foreignCard, email: email('foreign'), purchase_amount: 10 },
  });
  expect(f.status).toBe(200);
  // With SQL: many rows on the points card for Caio's account, with awkward references and metadata.
  await sys.db.query(
    `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, reference, metadata, created_at)
     SELECT $1, $2, $3, 'staff_adjustment', g, g, CASE WHEN g % 3 = 0 THEN 'line' || chr(10) || 'break, "q" ' || g END,
            CASE WHEN g % 4 = 0 THEN jsonb_build_object('note', 'say "hi", ' || g, 'n', g) END,
            timestamptz '2031-01-05T00:00:00Z' + g * interval '1 second 1 microsecond'
       FROM generate_series(1, $4) g`,
    [creds.tenantId, points, caio, SEEDED],
  );
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

describe('journal export', () => {
  it('JSON Lines equal the journal row for row, over several pages, without another tenant’s rows', async () => {
    const r = await download('/api/v1/exports/journal');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/x-ndjson');
    expect(r.headers.get('content-disposition')).toMatch(/^attachment; filename="journal-\d{8}T\d{6}Z\.jsonl"$/);
    expect(r.headers.get('content-length')).toBeNull();
    expect(r.text.length).toBeGreaterThan(2 * 512 * 1024);
    const expected = await journalFromSql('j.tenant_id = $1', [creds.tenantId]);
    expect(expected.length).toBe(SEEDED + 24);
    expect(jsonLines(r.text).map(comparable)).toEqual(expected);
  });

  it('CSV has a header line, RFC 4180 quoting and the same rows', async () => {
    const r = await download('/api/v1/exports/journal?format=csv');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(r.headers.get('content-disposition')).toMatch(/filename="journal-\d{8}T\d{6}Z\.csv"$/);
    const [header, ...rows] = csvRows(r.text);
    expect(header).toEqual([
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
    ]);
    expect(r.text).toContain('"ref,0""');
    const expected = await journalFromSql('j.tenant_id = $1', [creds.tenantId]);
    expect(rows.map((v) => comparable(fromCsv(header!, v)))).toEqual(expected);
    // Cashback amounts in currency units with two decimals.
    expect(rows.find((v) => Number(v[1]) === cashback)![4]).toMatch(/^\d+\.\d{2}$/);
  });

  it('filters by card and by a time range exactly as SQL does', async () => {
    const byCard = await download(`/api/v1/exports/journal?card_id=${cashback}`);
    expect(byCard.status).toBe(200);
    expect(byCard.headers.get('content-disposition')).toContain(`journal-card-${cashback}-`);
    expect(jsonLines(byCard.text).map(comparable)).toEqual(await journalFromSql('j.card_id = $1', [cashback]));

    const from = '2031-01-05T00:30:00.5Z';
    const to = '2031-01-12';
    const ranged = await download(`/api/v1/exports/journal?from=${from}&to=${to}&format=csv`);
    expect(ranged.status).toBe(200);
    const [header, ...rows] = csvRows(ranged.text);
    const expected = await journalFromSql(
      `j.tenant_id = $1 AND j.created_at >= $2 AND j.created_at < timestamptz '2031-01-13T00:00:00Z'`,
      [creds.tenantId, from],
    );
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(SEEDED + 24);
    expect(rows.map((v) => comparable(fromCsv(header!, v)))).toEqual(expected);

    const empty = await download('/api/v1/exports/journal?from=2030-01-01&to=2030-01-01&format=csv');
    expect(empty.status).toBe(200);
    expect(empty.text).toBe(`${header!.join(',')}\r\n`);
  });

  it('a file of one page, or an empty one, is chunked as well, without Content-Length', async () => {
    /** The answer's headers as they came on the wire (node:http, no client reading them for us). */
    const rawGet = (path: string) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
        http
          .get(`${sys.url}${path}`, { headers: headers() }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
          })
          .on('error', reject);
      });
    for (const query of [`card_id=${cashback}`, `card_id=${cashback}&format=csv`, 'from=2030-01-01&to=2030-01-01']) {
      const r = await rawGet(`/api/v1/exports/journal?${query}`);
      expect(r.status, r.body).toBe(200);
      expect(r.headers['transfer-encoding'], query).toBe('chunked');
      expect(r.headers['content-length'], query).toBeUndefined();
      expect(r.body).toBe((await download(`/api/v1/exports/journal?${query}`)).text);
    }
    const members = await rawGet('/api/v1/exports/members');
    expect(members.headers['transfer-encoding']).toBe('chunked');
    expect(members.headers['content-length']).toBeUndefined();
    expect(jsonLines(members.body).length).toBeGreaterThan(0);
  });

  it('the reference’s examples are the files an export writes: CSV with its header, JSON Lines with its keys', async () => {
    const csv = await download('/api/v1/exports/journal?format=csv');
    const header = csv.text.slice(0, csv.text.indexOf('\r\n'));
    const jsonl = await download('/api/v1/exports/journal');
    const keys = Object.keys(jsonLines(jsonl.text)[0]!);
    const path = '/api/v1/exports/{entity}';
    for (const [url, auth] of [
      ['/openapi.json', {}],
      ['/staff/openapi.json', {}],
      ['/admin/openapi.json', { Authorization: `Bearer ${OPERATOR_TOKEN}` }],
    ] as const) {
      const r = await fetch(`${sys.url}${url}`, { headers: auth });
      expect(r.status, url).toBe(200);
      const doc = (await r.json()) as {
        paths: Record<
          string,
          { get?: { responses: Record<string, { content: Record<string, { example: string }> }> } }
        >;
      };
      const [, op] = Object.entries(doc.paths).find(([p]) => p.endsWith('/exports/{entity}') && p !== path) ?? [];
      const content = (url === '/openapi.json' ? doc.paths[path] : op)!.get!.responses['200']!.content;
      const csvExample = content['text/csv; charset=utf-8']!.example;
      const [exampleHeader, ...rows] = csvRows(csvExample);
      expect(exampleHeader!.join(','), url).toBe(header);
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect(row.length).toBe(exampleHeader!.length);
      const lines = jsonLines(content['application/x-ndjson']!.example);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(Object.keys(line)).toEqual(keys);
      // The same rows in both formats.
      expect(rows.map((v) => fromCsv(exampleHeader!, v))).toEqual(lines);
    }
  });

  it('a `to` of 9999-12-31 counts that day whole: the range ends in the year 10000', async () => {
    const all = jsonLines((await download('/api/v1/exports/journal')).text);
    for (const entity of ['journal', 'lots', 'members']) {
      for (const query of ['to=9999-12-31', 'from=1970-01-01&to=9999-12-31', 'to=9999-12-31T23:59:59-05:00']) {
        const r = await download(`/api/v1/exports/${entity}?${query}`);
        expect(r.status, `${entity}?${query}: ${r.text.slice(0, 200)}`).toBe(200);
        expect(r.headers.get('content-disposition')).toMatch(
          new RegExp(`^attachment; filename="${entity}-100000101T\\d{6}Z\\.jsonl"$`),
        );
        if (entity === 'journal') expect(jsonLines(r.text)).toEqual(all);
      }
    }
  });
});

describe('members, balances and lots', () => {
  it('members: the tenant’s members (the import’s columns after the id), by id', async () => {
    const r = await download('/api/v1/exports/members');
    expect(r.status).toBe(200);
    const { rows } = await sys.db.query<{ id: string; name: string; email: string | null; created_at: Date }>(
      `SELECT m.id::text, m.name, m.email, m.created_at FROM identity.members m WHERE m.tenant_id = $1 ORDER BY m.id`,
      [creds.tenantId],
    );
    const got = jsonLines(r.text);
    expect(got.map((m) => [m.id, m.name, m.email, Date.parse(String(m.joined_at))])).toEqual(
      rows.map((m) => [Number(m.id), m.name, m.email, m.created_at.getTime()]),
    );
    expect(Object.keys(got[0]!)).toEqual([
      'id',
      'external_id',
      'name',
      'email',
      'phone',
      'accepts_emails',
      'joined_at',
    ]);
    expect(got.find((m) => m.name === 'Reis, "Caio"')!.accepts_emails).toBe(true);
    const csv = await download('/api/v1/exports/members?format=csv');
    expect(csv.text).toContain('"Reis, ""Caio"""');
    expect(csvRows(csv.text).length).toBe(rows.length + 1);
  });

  it('balances: every account of the tenant with its balances in the card’s unit', async () => {
    const r = await download('/api/v1/exports/balances');
    expect(r.status).toBe(200);
    const { rows } = await sys.db.query<Record<string, string>>(
      `SELECT a.card_id::text, a.member_id::text, a.balance::text, a.pending::text, a.held::text, a.entries::text, c.reward_system
         FROM ledger.accounts a JOIN ledger.cards c ON c.id = a.card_id WHERE a.tenant_id = $1 ORDER BY a.card_id, a.member_id`,
      [creds.tenantId],
    );
    const unit = (r: Record<string, string>, v: string) =>
      r.reward_system === 'cashback' ? Number(v) / 100 : Number(v);
    expect(jsonLines(r.text).map((b) => [b.card_id, b.member_id, b.balance, b.pending, b.held, b.entries])).toEqual(
      rows.map((a) => [
        Number(a.card_id),
        Number(a.member_id),
        unit(a, a.balance!),
        unit(a, a.pending!),
        unit(a, a.held!),
        Number(a.entries),
      ]),
    );
  });

  it('lots: every lot of the card in the range, in order of creation', async () => {
    const r = await download(`/api/v1/exports/lots?card_id=${points}&from=2031-01-11`);
    expect(r.status).toBe(200);
    const { rows } = await sys.db.query<{ id: string; amount: string; remaining: string; created_at: Date }>(
      `SELECT id::text, amount::text, remaining::text, created_at FROM ledger.lots
        WHERE card_id = $1 AND created_at >= '2031-01-11' ORDER BY created_at, id`,
      [points],
    );
    expect(rows.length).toBeGreaterThan(0);
    expect(
      jsonLines(r.text).map((l) => [l.id, l.amount, l.remaining, Date.parse(String(l.created_at)), l.pending]),
    ).toEqual(rows.map((l) => [Number(l.id), Number(l.amount), Number(l.remaining), l.created_at.getTime(), false]));
  });
});

describe('values as stored (docs/api.md: exports)', () => {
  it('writes formula-like, multi-line and Unicode values exactly, quoted only as RFC 4180 asks, without a BOM', async () => {
    const own = await sys.tenant({ scopes: ALL });
    const card = await pointsCard(sys, own.tenantId);
    const api = apiClient(sys.url, own);
    const names = ['=HYPERLINK("https://evil.example","open")', '+1', '-2', '@SUM(A1:A9)', 'Zoë 😀 ليلى'];
    for (const name of names) {
      const r = await api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: card, email: email('formula'), member_name: name, purchase_amount: 5 },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    // References an API would not take (a tab first, a lone CR): the export writes what is stored.
    const references = ['\t=1+1', 'a\rb', '-25', 'x\r\ny'];
    for (const reference of references)
      await sys.db.query(
        `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, reference, created_at)
         SELECT tenant_id, card_id, member_id, 'staff_adjustment', 0, 5, $2, now() - interval '1 hour'
           FROM ledger.journal WHERE tenant_id = $1 LIMIT 1`,
        [own.tenantId, reference],
      );
    const members = await download('/api/v1/exports/members?format=csv', own);
    expect(members.text.startsWith('id,')).toBe(true);
    const [mHeader, ...mRows] = csvRows(members.text);
    const nameAt = mHeader!.indexOf('name');
    expect(mRows.map((r) => r[nameAt])).toEqual(names);
    const membersJson = jsonLines((await download('/api/v1/exports/members', own)).text);
    expect(membersJson.map((m) => m.name)).toEqual(names);
    const journal = await download('/api/v1/exports/journal?format=csv', own);
    const [jHeader, ...jRows] = csvRows(journal.text);
    const refAt = jHeader!.indexOf('reference');
    expect(jRows.map((r) => r[refAt]).filter((v) => v !== '')).toEqual(references);
    // A lone CR is inside quotes: a reader that ends lines at CR alone still reads one row.
    expect(journal.text).toContain('"a\rb"');
    expect(journal.text).toContain(',\t=1+1,');
  });
});

describe('the job form', () => {
  it('POST answers 202 with a job whose result is the streamed file, byte for byte', async () => {
    for (const [entity, query] of [
      ['journal', 'format=csv&to=2031-01-20'],
      ['journal', `card_id=${points}&from=2031-01-05T00:10:00Z&to=2031-01-20`],
      ['members', 'format=csv&to=2031-01-20'],
      ['balances', 'format=jsonl'],
      ['lots', 'from=1970-01-01&to=9999-12-31'],
    ] as const) {
      const r = await fetch(`${sys.url}/api/v1/exports/${entity}?${query}`, { method: 'POST', headers: headers() });
      const body = (await r.json()) as {
        success: boolean;
        data: { job: { id: string; kind: string; status: string } };
      };
      expect(r.status, JSON.stringify(body)).toBe(202);
      expect(body.data.job.kind).toBe(`export.${entity}`);
      expect(body.data.job.id).toMatch(entity === 'members' ? /^job_identity_/ : /^job_ledger_/);
      let job: { status: string; result_url?: string; progress: { done: number } } | undefined;
      for (let i = 0; i < 300; i++) {
        const g = await fetch(`${sys.url}/api/v1/jobs/${body.data.job.id}`, { headers: headers() });
        job = ((await g.json()) as { data: typeof job }).data;
        if (job!.status === 'succeeded' || job!.status === 'failed') break;
        await new Promise((res) => setTimeout(res, 100));
      }
      expect(job!.status, JSON.stringify(job)).toBe('succeeded');
      const file = await download(job!.result_url!);
      expect(file.status).toBe(200);
      // Balances are as they stand: the same now as a moment ago, the stream read at once.
      const streamed = await download(`/api/v1/exports/${entity}?${query}`);
      expect(file.headers.get('content-type')).toBe(streamed.headers.get('content-type'));
      expect(file.text.length).toBeGreaterThan(0);
      expect(file.text).toBe(streamed.text);
      const rows = query.includes('csv') ? csvRows(streamed.text).length - 1 : jsonLines(streamed.text).length;
      expect(job!.progress.done).toBe(rows);
    }
  });

  it("keeps the job's file from an app without programme_manage, which still reads the job's status", async () => {
    const r = await fetch(`${sys.url}/api/v1/exports/members?format=csv`, { method: 'POST', headers: headers() });
    const body = (await r.json()) as { data: { job: { id: string } } };
    expect(r.status, JSON.stringify(body)).toBe(202);
    const id = body.data.job.id;
    // Another app of the same tenant, with the read scopes only.
    const { app } = await sys.admin<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${creds.tenantId}/apps`,
      { name: 'read only', scopes: ['points_read', 'cashback_read', 'card_read'] },
    );
    const reader = { tenantId: creds.tenantId, appId: app.app_id, apiKey: app.api_key };
    let job: { status: string; result_url?: string } | undefined;
    for (let i = 0; i < 300; i++) {
      const g = await fetch(`${sys.url}/api/v1/jobs/${id}`, { headers: headers(reader) });
      expect(g.status).toBe(200);
      job = ((await g.json()) as { data: typeof job }).data;
      if (job!.status === 'succeeded' || job!.status === 'failed') break;
      await new Promise((res) => setTimeout(res, 100));
    }
    expect(job).toMatchObject({ status: 'succeeded', result_url: `/api/v1/jobs/${id}/result` });
    // The file (every member's name, email and phone) is not theirs to take.
    const refused = await download(job!.result_url!, reader);
    expect(refused.status, refused.text).toBe(403);
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(refused.text)).toEqual({
      success: false,
      error: {
        code: 'insufficient_scope',
        message: expect.stringContaining('programme_manage'),
        required_scope: 'programme_manage',
      },
    });
    const file = await download(job!.result_url!);
    expect(file.status).toBe(200);
    expect(file.text.split('\r\n')[0]).toBe('id,external_id,name,email,phone,accepts_emails,joined_at');
  });

  it('refuses what the stream refuses, before any job exists', async () => {
    const r = await fetch(`${sys.url}/api/v1/exports/journal?card_id=999999999`, {
      method: 'POST',
      headers: headers(),
    });
    expect(r.status).toBe(404);
    const u = await fetch(`${sys.url}/api/v1/exports/ledger`, { method: 'POST', headers: headers() });
    expect(u.status).toBe(404);
    expect(((await u.json()) as { error: { code: string } }).error.code).toBe('unknown_export');
  });
});

describe('refusals', () => {
  const refused = async (path: string, status: number, code: string, c = creds) => {
    const r = await download(path, c);
    expect(r.status, r.text).toBe(status);
    const body = JSON.parse(r.text) as { success: boolean; error: { code: string } };
    expect(body.success).toBe(false);
    expect(body.error.code).toBe(code);
  };

  it('answers the failure envelope for bad input, never a file', async () => {
    await refused('/api/v1/exports/transactions', 404, 'unknown_export');
    await refused('/api/v1/exports/journal?format=xml', 400, 'validation_error');
    await refused('/api/v1/exports/journal?from=2031-02-30', 400, 'validation_error');
    await refused('/api/v1/exports/journal?from=yesterday', 400, 'validation_error');
    await refused('/api/v1/exports/journal?from=2031-01-10T10:00:00', 400, 'validation_error');
    await refused('/api/v1/exports/journal?from=2031-01-12&to=2031-01-11', 400, 'validation_error');
    await refused('/api/v1/exports/journal?card_id=abc', 400, 'validation_error');
    await refused('/api/v1/exports/journal?card_id=999999999', 404, 'card_not_found');
    await refused(`/api/v1/exports/lots?card_id=${foreignCard}`, 404, 'card_not_found');
    await refused('/api/v1/exports/balances?from=2031-01-01', 400, 'validation_error');
    await refused(`/api/v1/exports/members?card_id=${points}`, 400, 'validation_error');
    const reader = await sys.tenant({ scopes: ['points_read'] });
    await refused('/api/v1/exports/journal', 403, 'insufficient_scope', reader);
  });

  it('another tenant sees only its own journal', async () => {
    const r = await download('/api/v1/exports/journal', other);
    expect(r.status).toBe(200);
    const rows = jsonLines(r.text);
    expect(rows.map((x) => x.card_id)).toEqual([foreignCard]);
  });
});

describe('pages read ahead', () => {
  // The ledger reads the page after the one it answers at once; what it keeps is given only to the
  // same tenant asking for the same export at the same cursor, and a page is the same bytes whether
  // it was read ahead or when asked.
  it('a page read ahead is the page asked for, and never another tenant’s', async () => {
    const nc = await connectAs('gateway', { url: sys.env.NATS_URL });
    try {
      const subject = `${sys.env.SUBJECT_ROOT}.ledger.exports.download`;
      const ask = (c: { tenantId: number }, cursor: string | null, n: number) =>
        callPage(
          nc,
          subject,
          {
            meta: { request_id: `ahead-${n}`, tenant_id: c.tenantId, app_id: 'test', sandbox: false, scopes: ALL },
            data: { entity: 'journal', format: 'csv', card_id: points, cursor },
          },
          `ahead-${n}`,
          10_000,
        );
      const first = await ask(creds, null, 1);
      if (!first.ok) throw new Error(JSON.stringify(first.error));
      const cursor = first.page.next;
      expect(cursor).not.toBeNull();
      // Another tenant presenting this tenant's cursor: the card is not theirs, so nothing of it.
      const foreign = await ask(other, cursor, 2);
      if (foreign.ok) expect(foreign.page.rows).toBe(0);
      else expect(foreign.error.code).toBe('card_not_found');
      // The owner asks for it (read ahead), then again (read when asked): the same bytes.
      const ahead = await ask(creds, cursor, 3);
      const again = await ask(creds, cursor, 4);
      if (!ahead.ok || !again.ok) throw new Error('a page failed');
      expect(ahead.page.rows).toBeGreaterThan(0);
      expect(Buffer.from(ahead.body).equals(Buffer.from(again.body))).toBe(true);
      expect(ahead.page).toEqual(again.page);
    } finally {
      await nc.close();
    }
  });
});

describe('the operator’s and the console’s export', () => {
  const query = () => `card_id=${points}&format=csv&to=2031-01-20`;

  it('the operator API streams any tenant’s export, the same bytes as the merchant API', async () => {
    const streamed = await download(`/api/v1/exports/journal?${query()}`);
    const r = await fetch(`${sys.url}/admin/v1/tenants/${creds.tenantId}/exports/journal?${query()}`, {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe(streamed.headers.get('content-type'));
    expect(await r.text()).toBe(streamed.text);
    const noToken = await fetch(`${sys.url}/admin/v1/tenants/${creds.tenantId}/exports/journal`);
    expect(noToken.status).toBe(401);
    const unknown = await fetch(`${sys.url}/admin/v1/tenants/${creds.tenantId}/exports/ledgers`, {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('unknown_export');
  });

  it('refuses a tenant that does not exist with 404 tenant_not_found (it streamed an empty file)', async () => {
    for (const entity of ['journal', 'members', 'balances', 'lots']) {
      const path = `/admin/v1/tenants/999999/exports/${entity}`;
      const r = await fetch(`${sys.url}${path}?format=csv`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
      const body = (await r.json()) as { error?: { code: string } };
      checkResponse('GET', path, r.status, body);
      expect(r.status, entity).toBe(404);
      expect(body.error?.code, entity).toBe('tenant_not_found');
    }
    // A tenant with nothing to export still gets its (empty) file.
    const empty = await sys.tenant({ scopes: ALL });
    const r = await fetch(`${sys.url}/admin/v1/tenants/${empty.tenantId}/exports/members`, {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('');
  });

  it('npm run admin -- export streams it into a file, which appears only when whole', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'export-cli-'));
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      env: { OPERATOR_TOKEN, LOYALTY_URL: sys.url },
      out: (t: string) => out.push(t),
      err: (t: string) => err.push(t),
      fetch,
    };
    const file = path.join(dir, 'journal.csv');
    const args = ['export', '--tenant', String(creds.tenantId), '--entity', 'journal', '--out', file];
    const code = await runCli([...args, '--card', String(points), '--to', '2031-01-20'], io);
    expect(code, err.join('\n')).toBe(0);
    const streamed = await download(`/api/v1/exports/journal?${query()}`);
    expect(readFileSync(file, 'utf8')).toBe(streamed.text);
    expect(out.join('\n')).toContain(`${Buffer.byteLength(streamed.text)} bytes (csv)`);
    const jsonl = path.join(dir, 'lots.jsonl');
    expect(await runCli(['export', '--tenant', String(creds.tenantId), '--entity', 'lots', '--out', jsonl], io)).toBe(
      0,
    );
    expect(readFileSync(jsonl, 'utf8')).toBe((await download('/api/v1/exports/lots')).text);
    const refused = path.join(dir, 'refused.csv');
    const bad = await runCli(
      ['export', '--tenant', String(creds.tenantId), '--entity', 'journal', '--out', refused, '--card', '999999999'],
      io,
    );
    expect(bad).toBe(1);
    expect(err.join('\n')).toContain('card_not_found');
    expect(existsSync(refused)).toBe(false);
    expect(existsSync(`${refused}.part`)).toBe(false);
  });

  it('the console’s export is for managers, of their own tenant', async () => {
    const managerEmail = `exports.manager.${Date.now()}@example.com`;
    await sys.admin('POST', `/admin/v1/tenants/${creds.tenantId}/staff`, {
      email: managerEmail,
      name: 'Export Manager',
      role: 'manager',
    });
    const staff = staffClient(sys.url);
    const manager = await signIn(staff, creds.tenantId, managerEmail);
    const r = await fetch(`${sys.url}/staff/v1/exports/journal?${query()}`, {
      headers: { authorization: `Bearer ${manager}` },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toMatch(/^attachment; filename="journal-card-\d+-\d{8}T\d{6}Z\.csv"$/);
    expect(await r.text()).toBe((await download(`/api/v1/exports/journal?${query()}`)).text);
    const foreign = await fetch(`${sys.url}/staff/v1/exports/journal?card_id=${foreignCard}`, {
      headers: { authorization: `Bearer ${manager}` },
    });
    expect(foreign.status).toBe(404);
    const clerkEmail = `exports.clerk.${Date.now()}@example.com`;
    await sys.admin('POST', `/admin/v1/tenants/${creds.tenantId}/staff`, {
      email: clerkEmail,
      name: 'Clerk',
      role: 'staff',
    });
    const clerk = await signIn(staff, creds.tenantId, clerkEmail);
    const denied = await fetch(`${sys.url}/staff/v1/exports/journal`, {
      headers: { authorization: `Bearer ${clerk}` },
    });
    expect(denied.status).toBe(403);
  });
});
