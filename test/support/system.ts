import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Subjects } from '@loyalty/contracts';
import { createLogger, ManualClock, type RunningService } from '@loyalty/runtime';
import { readIdentityConfig, startIdentity } from '@loyalty/identity';
import { readGatewayConfig, startGateway, type RunningGateway } from '@loyalty/gateway';
import { readLedgerConfig, startLedger } from '@loyalty/ledger';
import { readClaimsConfig, startClaims } from '@loyalty/claims';
import { readReferralsConfig, startReferrals } from '@loyalty/referrals';
import { readWebhooksConfig, startWebhooks } from '@loyalty/webhooks';
import { checkResponse } from './contract.ts';
import { MailSink } from './mail-sink.ts';
import { connectAs, localNats, natsUserEnv } from './nats.ts';

/** The servers of this run (test/support/global-setup.ts sets them: local ones, or containers). */
const ADMIN_URL = process.env.LOYALTY_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.LOYALTY_REDIS_URL || 'redis://127.0.0.1:6379';
export const OPERATOR_TOKEN = 'test-operator-token-0123456789';
/** The audit key of the test systems (identity's AUDIT_KEY): a test that forges rows does not have it. */
export const TEST_AUDIT_KEY = 'test-audit-key-0123456789abcdef0123456789';

/**
 * A pool on a test database. pool.end() resolves before the server has closed its connections; the
 * DROP DATABASE ... WITH (FORCE) that ends a test can then terminate one (57P01), which an idle
 * client reports on its pool. Without a listener that is an uncaught exception in the test process
 * (seen on loaded machines), so every test's pool gets one: a connection lost there is no failure.
 */
export function testPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  pool.on('error', () => undefined);
  return pool;
}

/** A database of its own for one test file, dropped at the end: files run in parallel and twice in a row. */
export async function createTestDatabase(
  adminUrl = ADMIN_URL,
): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `loyalty_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = adminUrl.replace(/\/[^/]*$/, `/${name}`);
  return {
    url,
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

type ServiceName = 'identity' | 'ledger' | 'claims' | 'referrals' | 'webhooks';

export interface TestSystem {
  url: string;
  clock: ManualClock;
  mail: MailSink;
  db: pg.Pool;
  env: Record<string, string>;
  /** `env` plus the NATS user of one service (or the gateway), to start another replica of it. */
  envFor(user: ServiceName | 'gateway'): Record<string, string>;
  gateway: RunningGateway;
  services: Partial<Record<ServiceName, RunningService>>;
  /** Start (again) one service with the same settings. */
  startService(name: ServiceName): Promise<void>;
  stopService(name: ServiceName): Promise<void>;
  admin<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** A sandbox (or live) tenant with one app holding `scopes`. */
  tenant(opts?: { sandbox?: boolean; scopes?: string[] }): Promise<{ tenantId: number; appId: string; apiKey: string }>;
  stop(): Promise<void>;
}

/**
 * The real system for an end-to-end test: its own database, subject root and Redis key prefix,
 * an SMTP sink, the chosen services and a gateway on a free port, all in this process,
 * talking over real PostgreSQL, NATS and Redis.
 */
export async function startTestSystem(
  opts: {
    services?: ServiceName[];
    env?: Record<string, string>;
    postgresAdminUrl?: string;
    /** A database made (and dropped at the end) by the caller's `createTestDatabase`, e.g. one loaded with older data. */
    database?: Awaited<ReturnType<typeof createTestDatabase>>;
  } = {},
): Promise<TestSystem> {
  const names = opts.services ?? ['identity'];
  const database = opts.database ?? (await createTestDatabase(opts.postgresAdminUrl));
  const mail = new MailSink();
  const smtpUrl = await mail.start();
  const root = `t${randomBytes(5).toString('hex')}`;
  const clock = new ManualClock();
  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    DATABASE_POOL_SIZE: '5',
    SUBJECT_ROOT: root,
    REDIS_KEY_PREFIX: `${root}:`,
    OPS_PORT: '0',
    OPS_HOST: '127.0.0.1',
    PORT: '0',
    HOST: '127.0.0.1',
    SMTP_URL: smtpUrl,
    // Sandbox tenants' mail is not sent without a sandbox server: the tests read it from the sink.
    SANDBOX_SMTP_URL: smtpUrl,
    OTP_SECRET: 'test-otp-secret-0123456789',
    // The webhook signing secrets' key-encryption key (32 bytes, base64): one per test system.
    SECRETS_KEY: randomBytes(32).toString('base64'),
    AUDIT_KEY: TEST_AUDIT_KEY,
    OPERATOR_TOKEN,
    // Long enough that a loaded machine does not turn slow answers into 503s; short enough for the hang test.
    REQUEST_TIMEOUT_MS: '4000',
    NATS_URL: localNats().url,
    REDIS_URL,
    // The tests' webhook receivers listen on 127.0.0.1; the SSRF tests turn this off.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    // Points-earned mails at once (the digest rule has its own test with a window).
    EARN_MAIL_WINDOW_SECONDS: '0',
    EARN_MAIL_INTERVAL_MS: '100',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...opts.env,
  };
  const log = (name: string) => createLogger(name, env.LOG_LEVEL);
  // Every service (and the gateway) connects as its own NATS user, as in production.
  const envOf = (user: ServiceName | 'gateway') => ({ ...env, ...natsUserEnv(user, env.NATS_URL) });
  const starters: Record<ServiceName, () => Promise<RunningService>> = {
    identity: () => startIdentity(readIdentityConfig(envOf('identity')), { clock, log: log('identity') }),
    ledger: () => startLedger(readLedgerConfig(envOf('ledger')), { clock, log: log('ledger') }),
    claims: () => startClaims(readClaimsConfig(envOf('claims')), { clock, log: log('claims') }),
    referrals: () => startReferrals(readReferralsConfig(envOf('referrals')), { clock, log: log('referrals') }),
    webhooks: () => startWebhooks(readWebhooksConfig(envOf('webhooks')), { clock, log: log('webhooks') }),
  };
  const services: Partial<Record<ServiceName, RunningService>> = {};
  for (const name of names) services[name] = await starters[name]();
  // The gateway compares a cached staff session's end with the services' clock.
  const gateway = await startGateway(readGatewayConfig(envOf('gateway')), { log: log('gateway'), clock });
  const db = testPool(database.url, 2);

  const admin = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${gateway.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${OPERATOR_TOKEN}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as { success: boolean; data: T };
    checkResponse(method, path, res.status, json);
    if (!json.success) throw new Error(`admin ${method} ${path} failed: ${JSON.stringify(json)}`);
    return json.data;
  };

  return {
    url: gateway.url,
    clock,
    mail,
    db,
    env,
    envFor: envOf,
    gateway,
    services,
    admin,
    async startService(name) {
      services[name] = await starters[name]();
    },
    async stopService(name) {
      await services[name]?.stop();
      delete services[name];
    },
    async tenant(o = {}) {
      const { tenant } = await admin<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', {
        name: `tenant ${randomBytes(3).toString('hex')}`,
        sandbox: o.sandbox ?? true,
      });
      const { app } = await admin<{ app: { app_id: string; api_key: string } }>(
        'POST',
        `/admin/v1/tenants/${tenant.id}/apps`,
        {
          name: 'test app',
          scopes: o.scopes ?? ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read'],
        },
      );
      return { tenantId: tenant.id, appId: app.app_id, apiKey: app.api_key };
    },
    async stop() {
      await gateway.stop();
      for (const s of Object.values(services)) await s?.stop();
      await db.end();
      await mail.stop();
      await database.drop();
      await deleteEventStream(root, env.NATS_URL);
    },
  };
}

/** A small HTTP client for the API: JSON in, `{ status, body, headers }` out. */
export function apiClient(baseUrl: string, creds: { appId: string; apiKey: string }) {
  return async function call(
    method: string,
    path: string,
    opts: { body?: unknown; token?: string; headers?: Record<string, string>; rawBody?: string } = {},
  ): Promise<{
    status: number;
    body: {
      success: boolean;
      data?: Record<string, unknown>;
      error?: Record<string, unknown>;
      message?: string;
    } & Record<string, unknown>;
    headers: Headers;
  }> {
    const headers: Record<string, string> = { 'x-app-id': creds.appId, 'x-api-key': creds.apiKey, ...opts.headers };
    if (opts.token) headers['x-member-token'] = opts.token;
    if (opts.body !== undefined || opts.rawBody !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: opts.rawBody ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
    });
    const json: unknown = await res.json();
    checkResponse(method, path, res.status, json);
    return { status: res.status, body: json as never, headers: res.headers };
  };
}

/** A client of the staff API (`/staff/v1`): a staff token as bearer, JSON in, `{ status, body, headers }` out. */
export function staffClient(baseUrl: string) {
  return async function call(
    method: string,
    path: string,
    opts: { body?: unknown; token?: string; headers?: Record<string, string> } = {},
  ): Promise<{
    status: number;
    body: { success: boolean; data?: Record<string, unknown>; error?: Record<string, unknown> } & Record<
      string,
      unknown
    >;
    headers: Headers;
  }> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    const json: unknown = await res.json();
    checkResponse(method, path, res.status, json);
    return { status: res.status, body: json as never, headers: res.headers };
  };
}

/** Each test system's JetStream stream is its own; remove it so runs leave nothing behind. */
export async function deleteEventStream(root: string, natsUrl?: string): Promise<void> {
  const nc = await connectAs('admin', { url: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(new Subjects(root).streamName()).catch(() => undefined);
  } finally {
    await nc.close();
  }
}
