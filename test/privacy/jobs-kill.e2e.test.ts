import { afterAll, describe, expect, it } from 'vitest';
import { clusterEnv } from '../support/cluster-env.ts';
import { Cluster } from '../support/cluster.ts';
import { createTestDatabase, OPERATOR_TOKEN, testPool } from '../support/system.ts';

/**
 * A member's export and erasure survive the death of the identity replica running them (compiled
 * services, each replica its own process). The export: of two identity replicas, the one holding
 * the job's lease is killed (SIGKILL) after a few pages; the other resumes from the last page kept
 * once the lease ran out, and the document holds every row exactly once. The erasure: the replica
 * running it is killed while the ledger erases; a new one repeats that part (idempotent) and
 * finishes the job once, the books unchanged.
 */
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const ROWS = 12_000;

describe('member data jobs and a killed replica', () => {
  // The export, then the erasure: each job's replica is killed mid-way and another one finishes it.
  it('finishes an export and an erasure once when the replica running each is killed mid-way', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const { env, root } = clusterEnv(db.url, 'pjobs', {
      MAIL_NOTIFICATIONS_PER_SECOND: '0',
      SMTP_URL: 'smtp://127.0.0.1:1',
    });
    const cluster = new Cluster(env, `${process.cwd()}/var/cluster-logs/privacy-jobs-${root}`);
    cleanups.push(() => cluster.stop());
    await cluster.add('identity', 2);
    for (const s of ['ledger', 'claims', 'referrals', 'webhooks', 'gateway'] as const) await cluster.add(s);
    const gw = cluster.of('gateway')[0]!.url;
    const pool = testPool(db.url, 2);
    cleanups.push(() => pool.end());

    const call = async <T>(method: string, path: string, headers: Record<string, string>, body?: unknown) => {
      const res = await fetch(`${gw}${path}`, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const out = (await res.json()) as { success: boolean; data: T };
      if (!out.success) throw new Error(`${method} ${path}: ${JSON.stringify(out)}`);
      return out.data;
    };
    const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` };
    const { tenant } = await call<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', operator, {
      name: 'privacy jobs',
      sandbox: true,
    });
    const { app } = await call<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${tenant.id}/apps`,
      operator,
      { name: 'back office', scopes: ['points_write', 'members_manage'] },
    );
    const { card } = await call<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant.id}/cards`, operator, {
      name: 'Points',
      reward_system: 'points',
      points_ratio: 1,
    });
    const creds = { 'x-app-id': app.app_id, 'x-api-key': app.api_key };
    const earned = await call<{ member_id: number }>('POST', '/api/v1/loyalty/points/earn', creds, {
      card_id: card.id,
      email: `long.history.${root}@example.com`,
      purchase_amount: 10,
      reference: 'first',
    });
    const memberId = earned.member_id;
    // A long history, written straight into the books (only the export reads it): many pages to gather.
    await pool.query(
      `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, created_at)
       SELECT $1, $2, $3, 'staff_added_points', 0, 10, now() FROM generate_series(1, $4) g`,
      [tenant.id, card.id, memberId, ROWS],
    );

    const job = await call<{ id: string }>('POST', `/api/v1/members/${memberId}/export`, creds);
    const rowId = job.id.replace(/^job_identity_/, '');
    // Kill whichever replica holds the lease, once it has kept a few pages.
    let owner: string | null = null;
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
      const { rows } = await pool.query<{ pages: number | null; lease_owner: string | null; status: string }>(
        `SELECT (checkpoint->>'pages')::int AS pages, lease_owner, status FROM identity.jobs WHERE id = $1`,
        [rowId],
      );
      const r = rows[0];
      if (r && r.status === 'running' && (r.pages ?? 0) >= 3 && r.lease_owner) {
        owner = r.lease_owner;
        break;
      }
      if (r?.status === 'succeeded') break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(owner, 'the job was still running after a few pages').not.toBeNull();
    const pid = Number(owner!.split('-')[0]);
    const victim = cluster.of('identity').find((r) => r.pid === pid);
    expect(victim, `a replica with pid ${pid}`).toBeDefined();
    expect(await victim!.signal('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    const killedAt = await pool.query<{ pages: number }>(
      `SELECT (checkpoint->>'pages')::int AS pages FROM identity.jobs WHERE id = $1`,
      [rowId],
    );
    expect(killedAt.rows[0]!.pages).toBeLessThan(ROWS / 200);

    // The survivor takes it over when the lease runs out (30 s) and goes on from the last page kept.
    let view: { status: string; result_url?: string } = { status: 'queued' };
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      view = await call('GET', `/api/v1/jobs/${job.id}`, creds);
      if (view.status === 'succeeded' || view.status === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(view.status).toBe('succeeded');
    const { rows } = await pool.query<{ attempts: number; lease_owner: string | null }>(
      `SELECT attempts, lease_owner FROM identity.jobs WHERE id = $1`,
      [rowId],
    );
    expect(rows[0]!.attempts).toBe(2);
    const res = await fetch(`${gw}${view.result_url!}`, { headers: creds });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { ledger: { journal: { id: number }[] } };
    expect(doc.ledger.journal).toHaveLength(ROWS + 1);
    expect(new Set(doc.ledger.journal.map((j) => j.id)).size).toBe(ROWS + 1);
    const parts = await pool.query(`SELECT 1 FROM identity.member_export_parts WHERE job_id = $1`, [rowId]);
    expect(parts.rows).toEqual([]);

    // The member's erasure, its replica killed while the ledger erases (many rows of app metadata):
    // the survivor repeats that part (idempotent) and finishes the job, once.
    await pool.query(
      `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, metadata, created_at)
       SELECT $1, $2, $3, 'staff_added_points', 0, 10, jsonb_build_object('till', g), now() FROM generate_series(1, $4) g`,
      [tenant.id, card.id, memberId, 4 * ROWS],
    );
    const books = () =>
      pool.query(`SELECT count(*)::int AS n, sum(amount)::int AS total FROM ledger.journal WHERE tenant_id = $1`, [
        tenant.id,
      ]);
    const before = (await books()).rows[0];
    const erase = await call<{ id: string }>('POST', `/api/v1/members/${memberId}/erase`, creds);
    const eraseRow = erase.id.replace(/^job_identity_/, '');
    let eraseOwner: string | null = null;
    const eraseUntil = Date.now() + 30_000;
    while (Date.now() < eraseUntil && eraseOwner === null) {
      const { rows: r } = await pool.query<{ lease_owner: string | null; status: string }>(
        `SELECT lease_owner, status FROM identity.jobs WHERE id = $1`,
        [eraseRow],
      );
      if (r[0]?.status === 'running' && r[0].lease_owner) eraseOwner = r[0].lease_owner;
      else if (r[0]?.status === 'succeeded') break;
      else await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(eraseOwner, 'the erasure was still running').not.toBeNull();
    // One identity replica is left and holds the lease: killed, then a new one is started.
    const holder = cluster.of('identity').find((r) => r.pid === Number(eraseOwner!.split('-')[0]));
    expect(holder).toBeDefined();
    await holder!.signal('SIGKILL');
    const cut = await pool.query<{ status: string }>(`SELECT status FROM identity.jobs WHERE id = $1`, [eraseRow]);
    expect(cut.rows[0]!.status).toBe('running');
    await cluster.add('identity');
    let erased: { status: string; errors: unknown[] } = { status: 'queued', errors: [] };
    const eraseDeadline = Date.now() + 120_000;
    while (Date.now() < eraseDeadline) {
      erased = await call('GET', `/api/v1/jobs/${erase.id}`, creds);
      if (erased.status === 'succeeded' || erased.status === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(erased).toMatchObject({ status: 'succeeded', errors: [] });
    const job2 = await pool.query<{ attempts: number }>(`SELECT attempts FROM identity.jobs WHERE id = $1`, [eraseRow]);
    expect(job2.rows[0]!.attempts).toBe(2);
    expect((await books()).rows[0]).toEqual(before);
    const left = await pool.query(
      `SELECT count(*)::int AS n FROM ledger.journal WHERE member_id = $1 AND metadata IS NOT NULL`,
      [memberId],
    );
    expect(left.rows[0].n).toBe(0);
    const erasure = await pool.query(
      `SELECT completed_at IS NOT NULL AS done, name, email, phone FROM identity.member_erasures WHERE member_id = $1`,
      [memberId],
    );
    expect(erasure.rows).toEqual([{ done: true, name: null, email: null, phone: null }]);
  }, 400_000);
});
