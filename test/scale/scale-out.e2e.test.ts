import { afterAll, describe, expect, it } from 'vitest';
import { clusterEnv } from '../support/cluster-env.ts';
import { Cluster } from '../support/cluster.ts';
import { localNats } from '../support/nats.ts';
import { PrivateNats, PrivatePostgres } from '../support/private-servers.ts';
import { createTestDatabase } from '../support/system.ts';
import { drive, plan, provision, verifyExactlyOnce } from './load.ts';

/**
 * Scale-out proof on one machine: two replicas of every service and two gateways, each its own
 * compiled process. A load of earns and redemptions with Idempotency-Keys and client retries runs
 * while replicas are killed (SIGKILL) and stopped (SIGTERM), or while PostgreSQL and NATS restart.
 * Afterwards every operation was applied exactly once and every balance equals its journal.
 */
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function baseEnv(databaseUrl: string, natsUrl = localNats().url): Record<string, string> {
  return clusterEnv(databaseUrl, 'scale', {
    NATS_URL: natsUrl,
    REQUEST_TIMEOUT_MS: '2000',
    SHUTDOWN_TIMEOUT_MS: '8000',
  }).env;
}

async function startCluster(env: Record<string, string>, logName: string): Promise<Cluster> {
  const cluster = new Cluster(env, `${process.cwd()}/var/cluster-logs/${logName}-${env.SUBJECT_ROOT}`);
  cleanups.push(() => cluster.stop());
  for (const service of ['identity', 'ledger', 'claims', 'referrals'] as const) await cluster.add(service, 2);
  await cluster.add('gateway', 2);
  return cluster;
}

describe('scale-out', () => {
  it('applies every operation exactly once while a ledger replica is killed and an identity replica stopped', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const { MailSink } = await import('../support/mail-sink.ts');
    const mail = new MailSink();
    const smtp = await mail.start();
    cleanups.push(() => mail.stop());
    const cluster = await startCluster({ ...baseEnv(db.url), SMTP_URL: smtp, SANDBOX_SMTP_URL: smtp }, 'kill');
    const gateways = cluster.of('gateway').map((g) => g.url);
    const fixture = await provision(gateways, 24);
    const ops = plan(fixture, 3000, 'k');
    let killed: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
    let stopped: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
    await drive(fixture, ops, 24, (done) => {
      if (done === 1000 && !killed) killed = cluster.of('ledger')[0]!.signal('SIGKILL');
      if (done === 1600 && !stopped) stopped = cluster.of('identity')[0]!.signal('SIGTERM');
    });
    expect(await killed).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await stopped).toEqual({ code: 0, signal: null }); // graceful: exit 0
    await verifyExactlyOnce(db.url, fixture, ops);
    // Only the two replicas we stopped are gone: none crashed.
    const [ledger1, identity1] = [cluster.of('ledger')[0], cluster.of('identity')[0]];
    for (const r of cluster.replicas.filter((x) => x !== ledger1 && x !== identity1)) {
      expect({ name: r.name, code: r.exitCode, signal: r.exitSignal }).toEqual({
        name: r.name,
        code: null,
        signal: null,
      });
    }
    // The surviving replicas took over: retried operations were answered by them.
    expect(ops.some((o) => o.attempts > 1)).toBe(true);
    // A retry after everything settled replays the first answer.
    const sample = ops.find((o) => o.kind === 'cashback_redeem' && o.status === 200)!;
    const again = await fetch(`${gateways[1]}/api/v1/cashback/cashback/redeem`, {
      method: 'POST',
      headers: {
        'x-app-id': fixture.app.appId,
        'x-api-key': fixture.app.apiKey,
        'x-member-token': sample.token!,
        'content-type': 'application/json',
        'idempotency-key': sample.key,
      },
      body: JSON.stringify(sample.body),
    });
    expect(((await again.json()) as { data: { transaction_id: number } }).data.transaction_id).toBe(
      sample.transactionId,
    );
  }, 300_000);

  it('applies every operation exactly once while PostgreSQL and NATS restart', async () => {
    const postgres = new PrivatePostgres();
    const nats = new PrivateNats();
    await Promise.all([postgres.start(), nats.start()]);
    cleanups.push(
      () => postgres.destroy(),
      () => nats.destroy(),
    );
    const db = await createTestDatabase(postgres.adminUrl);
    const { MailSink } = await import('../support/mail-sink.ts');
    const mail = new MailSink();
    const smtp = await mail.start();
    cleanups.push(() => mail.stop());
    const cluster = await startCluster(
      { ...baseEnv(db.url, nats.url), SMTP_URL: smtp, SANDBOX_SMTP_URL: smtp },
      'restart',
    );
    const fixture = await provision(
      cluster.of('gateway').map((g) => g.url),
      16,
    );
    const ops = plan(fixture, 1800, 'r');
    let postgresRestart: Promise<void> | undefined;
    let natsRestart: Promise<void> | undefined;
    await drive(fixture, ops, 16, (done) => {
      if (done === 500 && !postgresRestart)
        postgresRestart = postgres
          .stop('fast')
          .then(() => new Promise((r) => setTimeout(r, 1000)))
          .then(() => postgres.start());
      if (done === 1100 && !natsRestart)
        natsRestart = nats
          .stop()
          .then(() => new Promise((r) => setTimeout(r, 1000)))
          .then(() => nats.start());
    });
    await postgresRestart;
    await natsRestart;
    await verifyExactlyOnce(db.url, fixture, ops);
    // No replica died: they rode out both restarts.
    for (const r of cluster.replicas)
      expect({ name: r.name, code: r.exitCode, signal: r.exitSignal }).toEqual({
        name: r.name,
        code: null,
        signal: null,
      });
  }, 300_000);
});
