// The audit log at scale: a tenant's hash chain of BENCH_AUDIT_ROWS rows appended through identity's
// own append (one transaction per event, as its consumer does), then the verification of the whole
// chain and a filtered page of the log, timed. Run: node --import tsx bench/audit-chain.ts
// Env: BENCH_POSTGRES_URL (admin connection), BENCH_AUDIT_ROWS (default 20000), BENCH_ITERATIONS (default 5).
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createLogger, migrate, systemClock, withTransaction } from '@loyalty/runtime';
import { AuditKeyring, auditLog } from '@loyalty/identity';

const ADMIN_URL =
  process.env.BENCH_POSTGRES_URL || process.env.LOYALTY_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const ROWS = Number(process.env.BENCH_AUDIT_ROWS ?? 20_000);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 5);
const TENANT = 1;

const name = `loyalty_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
const pool = new pg.Pool({ connectionString: url, max: 4 });
pool.on('error', () => undefined); // the DROP DATABASE ... WITH (FORCE) at the end may terminate an idle connection
const log = createLogger('bench', 'silent');

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

try {
  await migrate({
    databaseUrl: url,
    schema: 'identity',
    dir: fileURLToPath(new URL('../services/identity/migrations', import.meta.url)),
    log,
  });
  const audit = auditLog({ pool, clock: systemClock, log, keyring: new AuditKeyring(randomBytes(32).toString('hex')) });
  const event = (n: number) => ({
    id: randomUUID(),
    type: 'ledger.audit_recorded',
    tenant_id: TENANT,
    occurred_at: new Date().toISOString(),
    data: {
      actor: { type: 'staff', id: 3, email: `staff${n % 20}@example.com`, role: 'manager' },
      action: n % 3 === 0 ? 'claim.approved' : 'balance.adjusted',
      target: { member_id: n, card_id: 2, transaction_id: n },
      amounts: { points: n % 500 },
      details: { reason: `adjustment ${n}` },
      request_id: randomUUID(),
    },
  });
  const appendMs = await timed(async () => {
    for (let n = 1; n <= ROWS; n++) await withTransaction(pool, (db) => audit.append(event(n), db));
  });
  const verifyMs: number[] = [];
  let verdict: Awaited<ReturnType<typeof audit.verify>> | undefined;
  for (let i = 0; i < ITERATIONS; i++) verifyMs.push(await timed(async () => (verdict = await audit.verify(TENANT))));
  verifyMs.sort((a, b) => a - b);
  const meta = {
    request_id: 'bench',
    tenant_id: TENANT,
    staff: { id: 3, role: 'manager' as const, email: 'x@example.com' },
    session_id: 1,
  };
  const pageMs = await timed(() =>
    audit.list({ actor: 'staff7@example.com', action: 'balance', limit: 50, offset: 0 }, meta),
  );
  console.log(
    JSON.stringify(
      {
        rows: ROWS,
        append_per_second: Math.round(ROWS / (appendMs / 1000)),
        verify_ms_median: Math.round(verifyMs[Math.floor(verifyMs.length / 2)]!),
        verify_rows_per_second: Math.round(ROWS / (verifyMs[Math.floor(verifyMs.length / 2)]! / 1000)),
        valid: verdict?.valid,
        filtered_page_ms: Math.round(pageMs * 10) / 10,
      },
      null,
      2,
    ),
  );
} finally {
  await pool.end();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
