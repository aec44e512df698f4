import { afterAll, describe, expect, it } from 'vitest';
import { clusterEnv } from '../support/cluster-env.ts';
import { Cluster } from '../support/cluster.ts';
import { createTestDatabase, OPERATOR_TOKEN, testPool } from '../support/system.ts';

/**
 * An export job (the job form, for large tenants) survives the death of the replica running it
 * (compiled services, each replica its own process). Of two ledger replicas, the one holding the
 * job's lease is killed (SIGKILL) once a few steps are stored and before the last; the other
 * takes the job over when the lease has run out and goes on after the last stored step: the
 * result is the streamed file byte for byte (no page lost, none twice), with every journal row
 * once.
 */
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const ROWS = 200_000;

describe('an export job and a killed replica', () => {
  it('resumes after its last stored step and gives the streamed file when the running replica is killed', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const { env, root } = clusterEnv(db.url, 'expkill', {
      MAIL_NOTIFICATIONS_PER_SECOND: '0',
      SMTP_URL: 'smtp://127.0.0.1:1',
    });
    const cluster = new Cluster(env, `${process.cwd()}/var/cluster-logs/export-kill-${root}`);
    cleanups.push(() => cluster.stop());
    await cluster.add('identity');
    await cluster.add('ledger', 2);
    await cluster.add('gateway');
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
      name: 'export kill',
      sandbox: true,
    });
    const { card } = await call<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant.id}/cards`, operator, {
      name: 'Points',
      reward_system: 'points',
      points_ratio: 1,
    });
    const { app } = await call<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${tenant.id}/apps`,
      operator,
      { name: 'finance', scopes: ['programme_manage'] },
    );
    const finance = { 'x-app-id': app.app_id, 'x-api-key': app.api_key };
    await pool.query(
      `INSERT INTO ledger.accounts (card_id, member_id, tenant_id, created_at, updated_at)
       SELECT $1, 800000000 + a, $2, now(), now() FROM generate_series(1, 1000) a`,
      [card.id, tenant.id],
    );
    await pool.query(
      `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, reference, metadata, created_at)
       SELECT $1, $2, 800000001 + g % 1000, 'staff_added_points', 10, 10, 1000, 'kill-' || g,
              CASE WHEN g % 7 = 0 THEN jsonb_build_object('note', 'a "quoted", note') END,
              timestamptz '2025-01-01T00:00:00Z' + g * interval '1 second'
         FROM generate_series(1, $3::int) g`,
      [tenant.id, card.id, ROWS],
    );
    const query = `card_id=${card.id}&format=csv&to=2026-01-01`;

    const { job } = await call<{ job: { id: string } }>('POST', `/api/v1/exports/journal?${query}`, finance);
    const rowId = job.id.replace(/^job_ledger_/, '');
    let owner: string | null = null;
    const until = Date.now() + 60_000;
    while (Date.now() < until && owner === null) {
      const { rows } = await pool.query<{ size: number | null; lease_owner: string | null; status: string }>(
        `SELECT (checkpoint->>'size')::bigint AS size, lease_owner, status FROM ledger.jobs WHERE id::text = $1`,
        [rowId],
      );
      const r = rows[0];
      if (r?.status === 'succeeded') break;
      if (r && r.status === 'running' && (r.size ?? 0) >= 4_000_000 && r.lease_owner) owner = r.lease_owner;
      else await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(owner, 'the export job was still running after a few steps').not.toBeNull();
    const victim = cluster.of('ledger').find((r) => r.pid === Number(owner!.split('-')[0]));
    expect(victim, 'a ledger replica with the lease').toBeDefined();
    expect(await victim!.signal('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    const { rows: cut } = await pool.query<{ status: string; size: string; done: boolean | null }>(
      `SELECT status, checkpoint->>'size' AS size, (checkpoint->>'done')::boolean AS done FROM ledger.jobs WHERE id::text = $1`,
      [rowId],
    );
    expect(cut[0]).toMatchObject({ status: 'running', done: false });

    // The survivor takes the job over when the lease runs out (30 s) and goes on after the last step kept.
    type JobView = { status: string; result_url?: string; progress: { done: number } };
    let view: JobView | undefined;
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      view = await call<JobView>('GET', `/api/v1/jobs/${job.id}`, finance);
      if (view.status === 'succeeded' || view.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(view?.status, JSON.stringify(view)).toBe('succeeded');
    const { rows: attempts } = await pool.query<{ attempts: number }>(
      'SELECT attempts FROM ledger.jobs WHERE id::text = $1',
      [rowId],
    );
    expect(attempts[0]!.attempts).toBe(2);
    const file = await (await fetch(`${gw}${view!.result_url!}`, { headers: finance })).text();
    const streamed = await (await fetch(`${gw}/api/v1/exports/journal?${query}`, { headers: finance })).text();
    expect(file.length).toBe(streamed.length);
    expect(file === streamed, 'the job result is the streamed file byte for byte').toBe(true);
    // Every row once, in order (a row's reference is kill-<g>; no line break inside a field here).
    const lines = file.split('\r\n').slice(1, -1);
    expect(lines.length).toBe(ROWS);
    expect(view!.progress.done).toBe(ROWS);
    const refs = lines.map((l) => Number(/,kill-(\d+),/.exec(l)?.[1]));
    expect(refs.every((g, i) => g === i + 1)).toBe(true);
  }, 600_000);
});
