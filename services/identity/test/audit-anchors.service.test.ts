import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from 'nats';
import { AUDIT_ANCHORED_EVENT, AUDIT_EVENT, staffOperations } from '@loyalty/contracts';
import { createLogger } from '@loyalty/runtime';
import { GENESIS_HASH, rowHash } from '../src/domain/audit-chain.ts';
import { chainPage } from '../src/store/audit.ts';
import { eventually } from '../../../test/support/staff.ts';
import { connectAs, localNats } from '../../../test/support/nats.ts';
import { startService, type ServiceRunner } from '../../../test/support/service-runner.ts';

/**
 * The keyed audit chain and its anchors, against the real PostgreSQL and NATS: someone who can
 * write identity's tables (and disable their append-only trigger) but does not hold AUDIT_KEY
 * rebuilds a tenant's chain with the public algorithm (plain SHA-256, as rows were hashed before
 * the chain was keyed). Verification tells the rebuilt chain from the real one: by the keyed
 * hashes, by the anchors identity signed and stored, and, when those were deleted too, by an
 * anchor kept outside (from the log line or the `audit.anchored` event).
 */
let identity: ServiceRunner<'identity'>;
let nc: NatsConnection;
const logLines: Record<string, unknown>[] = [];
let tenants = 800_000 + Math.floor(Math.random() * 100_000);

beforeAll(async () => {
  const capture = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  identity = await startService('identity', { log: createLogger('identity', 'info', capture) });
  nc = await connectAs('admin', { url: localNats().url });
}, 60_000);
afterAll(async () => {
  await nc?.close();
  await identity?.stop();
});

const entry = (n: number) => ({
  actor: { type: 'staff', id: 3, email: 'maria@example.com', role: 'manager' },
  action: 'balance.adjusted',
  target: { member_id: 42, card_id: 2, transaction_id: n },
  amounts: { points: n },
  details: { reason: `adjustment ${n}` },
  request_id: `req-${n}`,
});

/** A tenant of its own with `rows` audit rows appended by identity's consumer (as other services publish them). */
async function tenantWithChain(rows: number): Promise<number> {
  const tenant = (tenants += 1);
  for (let i = 1; i <= rows; i++) {
    const event = {
      id: randomUUID(),
      type: `ledger.${AUDIT_EVENT}`,
      tenant_id: tenant,
      occurred_at: new Date().toISOString(),
      data: entry(i),
    };
    await nc.jetstream().publish(identity.subjects.event('ledger', AUDIT_EVENT), JSON.stringify(event));
  }
  await eventually(async () => ((await head(tenant)) === rows ? true : undefined));
  return tenant;
}

async function head(tenant: number): Promise<number> {
  const { rows } = await identity.db.query<{ seq: string }>(
    'SELECT seq FROM identity.audit_heads WHERE tenant_id = $1',
    [tenant],
  );
  return Number(rows[0]?.seq ?? 0);
}

/** A manager of `tenant` (the staff API's verification; the operator's answers the same for a tenant that exists). */
const managerOf = (tenant: number) => ({
  request_id: randomUUID(),
  tenant_id: tenant,
  staff: { id: 1, role: 'manager' as const, email: 'maria@example.com' },
  session_id: 1,
});

const verify = (tenant: number, anchor?: string) =>
  identity.call(staffOperations['staff.audit.verify'], managerOf(tenant), anchor ? { anchor } : {});

/**
 * What someone with write access to the tables does: change row `edit`'s amounts, then recompute
 * every hash and link from there on with the public algorithm (SHA-256 of the canonical row), marked
 * as the legacy version or left marked as keyed, and move the head to match. Triggers are off for
 * the session (`session_replication_role`), as the table's owner can do.
 */
async function rebuild(tenant: number, edit: number, opts: { asLegacy: boolean; dropAnchors?: boolean }) {
  const client = await identity.db.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL session_replication_role = replica`);
    const rows = await chainPage(client, tenant, 0, 10_000);
    let prev = GENESIS_HASH;
    for (const row of rows) {
      if (row.seq < edit) {
        prev = row.hash; // the rows before the edit are left as they are
        continue;
      }
      const amounts = row.seq === edit ? { points: 1_000_000 } : row.amounts;
      const hash = rowHash({ ...row, amounts, prev_hash: prev });
      await client.query(
        // A row rewritten as unkeyed carries its details in itself, as version 1 did, and no digest.
        `UPDATE identity.audit_log SET amounts = $3, prev_hash = $4, hash = $5, chain_version = $6::smallint, key_id = $7,
                details = $8, details_digest = CASE WHEN $6::smallint = 3 THEN details_digest END
          WHERE tenant_id = $1 AND seq = $2`,
        [
          tenant,
          row.seq,
          JSON.stringify(amounts),
          prev,
          hash,
          opts.asLegacy ? 1 : row.chain_version,
          opts.asLegacy ? null : row.key_id,
          JSON.stringify(opts.asLegacy ? row.details : {}),
        ],
      );
      prev = hash;
    }
    await client.query('UPDATE identity.audit_heads SET hash = $2 WHERE tenant_id = $1', [tenant, prev]);
    if (opts.dropAnchors) await client.query('DELETE FROM identity.audit_anchors WHERE tenant_id = $1', [tenant]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

/** Anchor now, catching the `audit_anchored` events published for `tenant`. */
async function anchorNow(tenant: number): Promise<{ token: string; seq: number; hash: string }> {
  const sub = nc.subscribe(identity.subjects.event('identity', AUDIT_ANCHORED_EVENT));
  await nc.flush();
  const seen = (async () => {
    for await (const m of sub) {
      const event = m.json<{ tenant_id: number; data: { token: string; seq: number; hash: string } }>();
      if (event.tenant_id === tenant) return event.data;
    }
    throw new Error('subscription ended');
  })();
  await identity.service.hooks.anchorAuditChains();
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no anchor event')), 15_000));
  try {
    return await Promise.race([seen, timeout]);
  } finally {
    sub.unsubscribe();
  }
}

describe('keyed audit chain', () => {
  it('keys new rows, anchors each moved head once (stored, logged, published) and verifies against it', async () => {
    const tenant = await tenantWithChain(5);
    const { rows } = await identity.db.query<{ chain_version: number; key_id: string | null }>(
      'SELECT chain_version, key_id FROM identity.audit_log WHERE tenant_id = $1',
      [tenant],
    );
    expect(rows.every((r) => r.chain_version === 3 && /^[0-9a-f]{16}$/.test(r.key_id ?? ''))).toBe(true);

    const anchor = await anchorNow(tenant);
    expect(anchor).toMatchObject({ seq: 5, hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const logged = logLines.find(
      (l) => l.msg === 'audit chain anchored' && (l.audit_anchor as { tenant_id?: number }).tenant_id === tenant,
    );
    expect(logged?.audit_anchor).toMatchObject({ seq: 5, token: anchor.token });
    // Nothing moved: the next pass anchors nothing for this tenant.
    await identity.service.hooks.anchorAuditChains();
    const stored = await identity.db.query('SELECT seq FROM identity.audit_anchors WHERE tenant_id = $1', [tenant]);
    expect(stored.rows).toHaveLength(1);

    expect(await verify(tenant)).toMatchObject({
      ok: true,
      data: { valid: true, rows_checked: 5, legacy_rows: 0, keyed_from: 1, anchors_checked: 1, problem: null },
    });
    expect(await verify(tenant, anchor.token)).toMatchObject({ ok: true, data: { valid: true } });
  });

  it('detects a chain rebuilt with the public algorithm that still says it is keyed', async () => {
    const tenant = await tenantWithChain(4);
    await rebuild(tenant, 2, { asLegacy: false });
    expect(await verify(tenant)).toMatchObject({
      ok: true,
      data: { valid: false, problem: { seq: 2, reason: expect.stringMatching(/row 2 was changed/) } },
    });
  });

  it('detects unkeyed rows rebuilt after keyed ones', async () => {
    const tenant = await tenantWithChain(4);
    await rebuild(tenant, 3, { asLegacy: true });
    expect(await verify(tenant)).toMatchObject({
      ok: true,
      data: {
        valid: false,
        problem: {
          seq: 3,
          reason: expect.stringMatching(/row 3 is unkeyed \(the public algorithm\) after keyed rows/),
        },
      },
    });
  });

  it('detects a whole chain rebuilt as unkeyed rows by the signed anchor identity stored', async () => {
    const tenant = await tenantWithChain(4);
    await anchorNow(tenant);
    await rebuild(tenant, 1, { asLegacy: true });
    expect(await verify(tenant)).toMatchObject({
      ok: true,
      data: { valid: false, problem: { seq: 4, reason: expect.stringMatching(/not the row anchored at .*rebuilt/) } },
    });
  });

  it('detects a chain rebuilt as unkeyed rows with its stored anchors deleted, given an anchor kept outside', async () => {
    const tenant = await tenantWithChain(4);
    const kept = await anchorNow(tenant);
    await rebuild(tenant, 1, { asLegacy: true, dropAnchors: true });
    // Alone, the database now holds a consistent legacy chain; the answer says that nothing in it is keyed.
    expect(await verify(tenant)).toMatchObject({
      ok: true,
      data: { valid: true, legacy_rows: 4, keyed_from: null, anchors_checked: 0 },
    });
    expect(await verify(tenant, kept.token)).toMatchObject({
      ok: true,
      data: {
        valid: false,
        anchors_checked: 1,
        problem: { seq: 4, reason: expect.stringMatching(/not the row anchored/) },
      },
    });
  });

  it('detects rows deleted below an anchor (head moved back with them)', async () => {
    const tenant = await tenantWithChain(5);
    const kept = await anchorNow(tenant);
    const client = await identity.db.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL session_replication_role = replica`);
      await client.query('DELETE FROM identity.audit_log WHERE tenant_id = $1 AND seq > 3', [tenant]);
      const { rows } = await client.query<{ hash: string }>(
        'SELECT hash FROM identity.audit_log WHERE tenant_id = $1 AND seq = 3',
        [tenant],
      );
      await client.query('UPDATE identity.audit_heads SET seq = 3, hash = $2 WHERE tenant_id = $1', [
        tenant,
        rows[0]?.hash,
      ]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const verdict = await verify(tenant, kept.token);
    expect(verdict).toMatchObject({
      ok: true,
      data: {
        valid: false,
        problem: { seq: 4, reason: expect.stringMatching(/row 5 was anchored: rows were deleted/) },
      },
    });
  });

  it("refuses an anchor that is forged, altered or another tenant's", async () => {
    const tenant = await tenantWithChain(2);
    const other = await tenantWithChain(2);
    const anchor = await anchorNow(tenant);
    const forged = anchor.token.replace(/[0-9a-f]{64}$/, 'a'.repeat(64));
    const parts = anchor.token.split('.');
    parts[2] = '1'; // another position, the signature of the real one
    for (const [t, token] of [
      [tenant, forged],
      [tenant, parts.join('.')],
      [other, anchor.token],
    ] as const)
      expect(await verify(t, token)).toMatchObject({ ok: false, error: { code: 'audit_anchor_invalid' } });
  });

  it('verifies rows written before the chain was keyed, and refuses an unkeyed row after keyed ones', async () => {
    // A tenant whose first two rows were written by the earlier version (SHA-256, chain_version 1).
    const tenant = (tenants += 1);
    let prev = GENESIS_HASH;
    for (const seq of [1, 2]) {
      const e = entry(seq);
      const content = {
        tenant_id: tenant,
        seq,
        event_id: randomUUID(),
        service: 'ledger',
        occurred_at: '2026-01-0' + seq + 'T10:00:00.000Z',
        ...e,
        prev_hash: prev,
      };
      const hash = rowHash(content);
      await identity.db.query(
        `INSERT INTO identity.audit_log (tenant_id, seq, event_id, service, occurred_at, actor, actor_key, action,
           target, amounts, details, request_id, prev_hash, hash)
         VALUES ($1, $2, $3, 'ledger', $4, $5, 'maria@example.com', $6, $7, $8, $9, $10, $11, $12)`,
        [
          tenant,
          seq,
          content.event_id,
          content.occurred_at,
          JSON.stringify(e.actor),
          e.action,
          JSON.stringify(e.target),
          JSON.stringify(e.amounts),
          JSON.stringify(e.details),
          e.request_id,
          prev,
          hash,
        ],
      );
      prev = hash;
    }
    await identity.db.query('INSERT INTO identity.audit_heads (tenant_id, seq, hash) VALUES ($1, 2, $2)', [
      tenant,
      prev,
    ]);
    // The upgraded identity appends keyed rows after them.
    const event = { id: randomUUID(), type: `ledger.${AUDIT_EVENT}`, tenant_id: tenant, data: entry(3) };
    await nc
      .jetstream()
      .publish(
        identity.subjects.event('ledger', AUDIT_EVENT),
        JSON.stringify({ ...event, occurred_at: new Date().toISOString() }),
      );
    await eventually(async () => ((await head(tenant)) === 3 ? true : undefined));
    const meta = managerOf(tenant);
    expect(await identity.request(staffOperations['staff.audit.verify'], meta, {})).toMatchObject({
      valid: true,
      rows_checked: 3,
      legacy_rows: 2,
      keyed_from: 3,
    });
    const listed = await identity.request(staffOperations['staff.audit.list'], meta, { limit: 5, offset: 0 });
    expect(listed.entries.map((e) => e.chain_version)).toEqual([3, 1, 1]);

    // An unkeyed row made to follow the keyed one (as a rebuild from there would).
    const [keyed] = await chainPage(identity.db, tenant, 2, 1);
    const forged = { ...keyed!, seq: 4, event_id: randomUUID(), prev_hash: keyed!.hash };
    await identity.db.query(
      `INSERT INTO identity.audit_log (tenant_id, seq, event_id, service, occurred_at, actor, actor_key, action,
         target, amounts, details, request_id, prev_hash, hash)
       VALUES ($1, 4, $2, 'ledger', $3, $4, 'maria@example.com', $5, $6, $7, $8, $9, $10, $11)`,
      [
        tenant,
        forged.event_id,
        forged.occurred_at,
        JSON.stringify(forged.actor),
        forged.action,
        JSON.stringify(forged.target),
        JSON.stringify(forged.amounts),
        JSON.stringify(forged.details),
        forged.request_id,
        forged.prev_hash,
        rowHash(forged),
      ],
    );
    await identity.db.query('UPDATE identity.audit_heads SET seq = 4, hash = $2 WHERE tenant_id = $1', [
      tenant,
      rowHash(forged),
    ]);
    expect(await identity.request(staffOperations['staff.audit.verify'], meta, {})).toMatchObject({
      valid: false,
      problem: { seq: 4, reason: expect.stringMatching(/unkeyed \(the public algorithm\) after keyed rows/) },
    });
  });
});
