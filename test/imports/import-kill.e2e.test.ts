import { afterAll, describe, expect, it } from 'vitest';
import { clusterEnv } from '../support/cluster-env.ts';
import { Cluster, type ClusterService } from '../support/cluster.ts';
import { createTestDatabase, OPERATOR_TOKEN, testPool } from '../support/system.ts';

/**
 * An import survives the death of the replica executing it (compiled services, each replica its
 * own process). Members into identity, then balances into the ledger: of two replicas of the
 * owning service, the one holding the execute job's lease is killed (SIGKILL) once a few steps are
 * committed and before the last; the other resumes after the last checkpoint once the lease ran
 * out, and every line is applied exactly once (one member per external id, one journal row and one
 * lot per balance line, the counts adding up to the file).
 */
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const MEMBERS = 60_000;
const BALANCES = 60_000;

describe('an import and a killed replica', () => {
  it('resumes from its checkpoint and applies every line once when the executing replica is killed', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const { env, root } = clusterEnv(db.url, 'impkill', {
      MAIL_NOTIFICATIONS_PER_SECOND: '0',
      SMTP_URL: 'smtp://127.0.0.1:1',
    });
    const cluster = new Cluster(env, `${process.cwd()}/var/cluster-logs/import-kill-${root}`);
    cleanups.push(() => cluster.stop());
    await cluster.add('identity', 2);
    await cluster.add('ledger', 2);
    await cluster.add('gateway');
    const gw = cluster.of('gateway')[0]!.url;
    const pool = testPool(db.url, 2);
    cleanups.push(() => pool.end());
    const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` };
    const call = async <T>(method: string, path: string, body?: string, type = 'application/json') => {
      const res = await fetch(`${gw}${path}`, {
        method,
        headers: { ...operator, ...(body === undefined ? {} : { 'content-type': type }) },
        body,
      });
      const out = (await res.json()) as { success: boolean; data: T };
      if (!out.success) throw new Error(`${method} ${path}: ${JSON.stringify(out)}`);
      return out.data;
    };
    const { tenant } = await call<{ tenant: { id: number } }>(
      'POST',
      '/admin/v1/tenants',
      JSON.stringify({ name: 'import kill', sandbox: true }),
    );
    const { card } = await call<{ card: { id: number } }>(
      'POST',
      `/admin/v1/tenants/${tenant.id}/cards`,
      JSON.stringify({ name: 'Points', reward_system: 'points', points_ratio: 1 }),
    );
    const base = `/admin/v1/tenants/${tenant.id}/imports`;
    type Imp = { id: string; status: string; counts: Record<string, number> };
    const settle = async (id: string, until: string[]): Promise<Imp> => {
      const deadline = Date.now() + 180_000;
      while (Date.now() < deadline) {
        // A status asked of the replica the test has just killed (NATS handed it the request before it
        // saw the connection close) is answered 503 after the gateway's timeout: a client asks again.
        const imp = await call<Imp>('GET', `${base}/${id}`).catch((err: Error) => {
          if (err.message.includes('"service_unavailable"')) return undefined;
          throw err;
        });
        if (imp && until.includes(imp.status)) return imp;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`import ${id} did not reach ${until.join('/')}`);
    };

    /** Validate and execute a file; kill the replica of `service` that holds the execute job once it is mid-way. */
    const importAndKill = async (service: ClusterService, query: string, file: string, type: string, lines: number) => {
      const created = await call<Imp>('POST', `${base}?${query}`, file, type);
      expect((await settle(created.id, ['validated', 'invalid', 'failed'])).status).toBe('validated');
      await call('POST', `${base}/${created.id}/execute`);
      const rowId = created.id.replace(/^imp_[a-z]+_/, '');
      const schema = service === 'identity' ? 'identity' : 'ledger';
      let owner: string | null = null;
      let job: string | null = null;
      const until = Date.now() + 60_000;
      while (Date.now() < until && owner === null) {
        const { rows } = await pool.query<{
          job: string;
          line: number | null;
          lease_owner: string | null;
          status: string;
        }>(
          `SELECT j.id AS job, (j.checkpoint->>'line')::int AS line, j.lease_owner, j.status
             FROM ${schema}.imports i JOIN ${schema}.jobs j ON j.id = i.execute_job WHERE i.id = $1`,
          [rowId],
        );
        const r = rows[0];
        if (r?.status === 'succeeded') break;
        if (r && r.status === 'running' && (r.line ?? 0) >= 10_000 && r.lease_owner) {
          owner = r.lease_owner;
          job = r.job;
        } else await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(owner, 'the execute job was still running after a few steps').not.toBeNull();
      const victim = cluster.of(service).find((r) => r.pid === Number(owner!.split('-')[0]));
      expect(victim, `a ${service} replica with the lease`).toBeDefined();
      expect(await victim!.signal('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
      const cut = await pool.query<{ status: string; line: number }>(
        `SELECT status, (checkpoint->>'line')::int AS line FROM ${schema}.jobs WHERE id = $1`,
        [job],
      );
      expect(cut.rows[0]).toMatchObject({ status: 'running' });
      expect(cut.rows[0]!.line).toBeLessThan(lines);
      // The survivor takes the job over when the lease runs out (30 s) and goes on after the last step kept.
      const done = await settle(created.id, ['executed', 'failed']);
      expect(done.status).toBe('executed');
      expect(done.counts).toMatchObject({ lines, valid: lines, applied: lines, unchanged: 0 });
      const { rows } = await pool.query<{ attempts: number }>(`SELECT attempts FROM ${schema}.jobs WHERE id = $1`, [
        job,
      ]);
      expect(rows[0]!.attempts).toBe(2);
    };

    const run = root;
    const members = ['external_id,name,email'];
    for (let i = 1; i <= MEMBERS; i++) members.push(`${run}-${i},Member ${i},m${i}.${run}@example.com`);
    await importAndKill('identity', 'kind=members', `${members.join('\n')}\n`, 'text/csv', MEMBERS);
    const { rows: m } = await pool.query<{ n: number; ids: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT external_id)::int AS ids FROM identity.members WHERE tenant_id = $1`,
      [tenant.id],
    );
    expect(m[0]).toEqual({ n: MEMBERS, ids: MEMBERS });

    const balances: string[] = [];
    for (let i = 1; i <= BALANCES; i++)
      balances.push(
        JSON.stringify({ external_id: `b${i}`, member_external_id: `${run}-${i}`, points: i % 100 || 100 }),
      );
    await importAndKill(
      'ledger',
      `kind=balances&card_id=${card.id}`,
      `${balances.join('\n')}\n`,
      'application/x-ndjson',
      BALANCES,
    );
    const total = Array.from({ length: BALANCES }, (_, k) => (k + 1) % 100 || 100).reduce((a, b) => a + b, 0);
    const { rows: books } = await pool.query<{
      rows: number;
      lines: number;
      journal: number;
      lots: number;
      accounts: number;
    }>(
      `SELECT (SELECT count(*) FROM ledger.journal WHERE card_id = $1)::int AS rows,
              (SELECT count(DISTINCT metadata->'import'->>'external_id') FROM ledger.journal WHERE card_id = $1)::int AS lines,
              (SELECT sum(amount) FROM ledger.journal WHERE card_id = $1)::int AS journal,
              (SELECT sum(remaining) FROM ledger.lots WHERE card_id = $1)::int AS lots,
              (SELECT sum(balance) FROM ledger.accounts WHERE card_id = $1)::int AS accounts`,
      [card.id],
    );
    expect(books[0]).toEqual({ rows: BALANCES, lines: BALANCES, journal: total, lots: total, accounts: total });
    const { rows: keys } = await pool.query<{ n: number; unset: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE journal_id IS NULL)::int AS unset
         FROM ledger.import_keys WHERE card_id = $1`,
      [card.id],
    );
    expect(keys[0]).toEqual({ n: BALANCES, unset: 0 });
  }, 600_000);
});
