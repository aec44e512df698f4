import { randomBytes, randomUUID } from 'node:crypto';
import { headers as natsHeaders, type NatsConnection, type Subscription } from 'nats';
import pg from 'pg';
import type { z } from 'zod';
import {
  AdminMeta,
  AppError,
  Meta,
  REQUEST_ID_HEADER,
  ServiceMeta,
  StaffMeta,
  StaffSignInMeta,
  Subjects,
  type InternalOperation,
  type Operation,
  type ReplyMessage,
  type ServiceName,
} from '@loyalty/contracts';
import { callService, createLogger, jsonCodec, ManualClock, type Logger, type RunningService } from '@loyalty/runtime';
import { readIdentityConfig, startIdentity, type RunningIdentity } from '@loyalty/identity';
import { readLedgerConfig, startLedger, type RunningLedger } from '@loyalty/ledger';
import { readClaimsConfig, startClaims, type ClaimsOptions, type RunningClaims } from '@loyalty/claims';
import { readReferralsConfig, startReferrals } from '@loyalty/referrals';
import { readWebhooksConfig, startWebhooks, type RunningWebhooks } from '@loyalty/webhooks';
import { MailSink } from './mail-sink.ts';
import { connectAs, localNats, natsUserEnv } from './nats.ts';
import { createTestDatabase, deleteEventStream, OPERATOR_TOKEN, TEST_AUDIT_KEY, testPool } from './system.ts';

/**
 * One service alone, against the real PostgreSQL and NATS, without the gateway or the other
 * services: the test talks to it over NATS exactly as the gateway and the other services do, and
 * answers the other services' subjects it calls with fakes. Its own database and subject root, so
 * files run in parallel. Use it for a service's own behaviour (sagas, concurrency, its internal
 * operations); what crosses the gateway or several services stays in the end-to-end tests
 * (`startTestSystem`).
 */

/** What each service's start function returns. */
interface Running {
  identity: RunningIdentity;
  ledger: RunningLedger;
  claims: RunningClaims;
  referrals: RunningService;
  webhooks: RunningWebhooks;
}

/** Options of a service's start function beyond the clock and the logger the runner passes (e.g. claims' faults). */
interface Extra {
  identity: Record<never, never>;
  ledger: Record<never, never>;
  claims: Pick<ClaimsOptions, 'faults'>;
  referrals: Record<never, never>;
  webhooks: Record<never, never>;
}

type In<S> = S extends z.ZodType ? z.input<S> : unknown;

/** Any operation a service serves: a route of the contract tables or an internal operation. */
type AnyOperation = Operation | InternalOperation;

/** The meta a caller sends with `O`: the gateway's `Meta` (or the operator's, or a staff user's) for a route, `ServiceMeta` for an internal operation. */
export type MetaFor<O> = O extends { path: string }
  ? O['path'] extends `/admin/${string}`
    ? AdminMeta
    : O['path'] extends `/staff/${string}`
      ? O extends { staffRole: string }
        ? z.input<typeof StaffMeta>
        : z.input<typeof StaffSignInMeta>
      : z.input<typeof Meta>
  : O extends InternalOperation
    ? O['meta'] extends z.ZodType
      ? z.input<O['meta']>
      : z.input<typeof ServiceMeta>
    : never;

/** The data a caller sends with `O`: a route's params, query and body merged (as the gateway sends it), or the internal request. */
export type DataFor<O> = O extends { path: string; params?: unknown; query?: unknown; body?: unknown }
  ? In<O['params']> & In<O['query']> & In<O['body']>
  : O extends InternalOperation
    ? z.input<O['request']>
    : never;

/** What `O` answers on success. */
export type ReplyFor<O> = O extends { response: z.ZodType }
  ? z.output<O['response']>
  : O extends InternalOperation
    ? z.output<O['reply']>
    : never;

type FakeMeta<O extends InternalOperation> = O['meta'] extends z.ZodType ? z.output<O['meta']> : ServiceMeta;

/** A fake's answer: the reply data, or a thrown AppError (answered as the failure reply, as a real service does). */
export type FakeHandler<O extends InternalOperation> = (
  data: z.output<O['request']>,
  meta: FakeMeta<O>,
) => z.input<O['reply']> | Promise<z.input<O['reply']>>;

/** Another service's internal subject, answered by the test. */
export interface Fake<O extends InternalOperation> {
  /** Every request that reached the fake, in arrival order (meta and data after the contract's parsing). */
  readonly calls: { meta: FakeMeta<O>; data: z.output<O['request']> }[];
  /** Answer from now on with another handler (the recorded calls are kept). */
  answer(handler: FakeHandler<O>): void;
}

export interface ServiceRunner<N extends ServiceName> {
  name: N;
  /** The running service (claims: with `sweep()`); replaced by `restart`. */
  service: Running[N];
  /** A pool on the test database (2 connections). */
  db: pg.Pool;
  /** The service's clock. */
  clock: ManualClock;
  subjects: Subjects;
  /** The environment the service was started with (its own NATS user included). */
  env: Record<string, string>;
  /** The SMTP sink identity mails to (only when running identity). */
  mail?: MailSink;
  /** Send one of the service's operations over NATS as the gateway or another service would; the raw reply. */
  call<O extends AnyOperation>(op: O, meta: MetaFor<O>, data: DataFor<O>): Promise<ReplyMessage<ReplyFor<O>>>;
  /** `call`, answering the data of a success and throwing the AppError (code, message, details) of a failure. */
  request<O extends AnyOperation>(op: O, meta: MetaFor<O>, data: DataFor<O>): Promise<ReplyFor<O>>;
  /** Answer another service's internal operation (the service under test calls it). */
  fake<O extends InternalOperation>(op: O, handler: FakeHandler<O>): Promise<Fake<O>>;
  /** Stop the service and start it again on the same database and subject root (a crash and a restart). */
  restart(extra?: Extra[N]): Promise<void>;
  /** Another replica of the service, stopped by `stop()` if the test has not. */
  replica(extra?: Extra[N]): Promise<Running[N]>;
  /** Stop everything, drop the database and the subject root's event stream. Throws if a fake answered outside its contract. */
  stop(): Promise<void>;
}

/** Meta of a request from the gateway for a member API call of `tenant_id` (a sandbox app with every scope unless told). */
export function publicMeta(tenant_id: number, extra: Partial<Meta> = {}): Meta {
  return {
    request_id: `test-${randomUUID()}`,
    tenant_id,
    app_id: 'app_test',
    sandbox: true,
    scopes: ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read'],
    ...extra,
  };
}

/** Meta of an operator (admin API) request. */
export function operatorMeta(): AdminMeta {
  return { request_id: `test-${randomUUID()}`, operator: true };
}

/** Meta of a request from another service acting for `tenant_id`. */
export function serviceMeta(tenant_id: number, extra: Partial<ServiceMeta> = {}): ServiceMeta {
  return { request_id: `test-${randomUUID()}`, tenant_id, ...extra };
}

/** A tenant id of its own for a test (tenants live in identity, which a runner of another service does not run). */
let tenants = 0;
export function newTenantId(): number {
  tenants += 1;
  return 1_000 + tenants;
}

const CALL_TIMEOUT_MS = 15_000;

export async function startService<N extends ServiceName>(
  name: N,
  opts: {
    env?: Record<string, string>;
    postgresAdminUrl?: string;
    /** Where the service's log lines go (a test reading them); stdout otherwise. */
    logTo?: Parameters<typeof createLogger>[2];
    log?: Logger;
  } & Extra[N] = {} as Extra[N],
): Promise<ServiceRunner<N>> {
  const { env: envOverrides, postgresAdminUrl, logTo, log: givenLog, ...firstExtra } = opts;
  const database = await createTestDatabase(postgresAdminUrl);
  const root = `s${randomBytes(5).toString('hex')}`;
  const subjects = new Subjects(root);
  const clock = new ManualClock();
  const natsUrl = localNats().url;
  const mail = name === 'identity' ? new MailSink() : undefined;
  const smtpUrl = mail ? await mail.start() : 'smtp://127.0.0.1:1';
  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    DATABASE_POOL_SIZE: '5',
    SUBJECT_ROOT: root,
    OPS_PORT: '0',
    OPS_HOST: '127.0.0.1',
    SMTP_URL: smtpUrl,
    OTP_SECRET: 'test-otp-secret-0123456789',
    SECRETS_KEY: randomBytes(32).toString('base64'),
    AUDIT_KEY: TEST_AUDIT_KEY,
    OPERATOR_TOKEN,
    REQUEST_TIMEOUT_MS: '5000',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...envOverrides,
    // The service connects as its own NATS user, with its production permissions.
    ...natsUserEnv(name, natsUrl),
  };
  const log = givenLog ?? createLogger(name, env.LOG_LEVEL, logTo);
  const start = async (extra: Extra[N]): Promise<Running[N]> => {
    const starters: { [K in ServiceName]: () => Promise<Running[K]> } = {
      identity: () => startIdentity(readIdentityConfig(env), { clock, log }),
      ledger: () => startLedger(readLedgerConfig(env), { clock, log }),
      claims: () => startClaims(readClaimsConfig(env), { clock, log, ...extra }),
      referrals: () => startReferrals(readReferralsConfig(env), { clock, log }),
      webhooks: () => startWebhooks(readWebhooksConfig(env), { clock, log }),
    };
    return (await starters[name]()) as Running[N];
  };

  // The test's own connection (calls and fakes): the harness's unrestricted user.
  const nc: NatsConnection = await connectAs('admin', { url: natsUrl });
  const db = testPool(database.url, 2);
  const subscriptions: Subscription[] = [];
  const violations: string[] = [];
  const replicas: Running[N][] = [];
  let service: Running[N] | undefined;

  const cleanup = async () => {
    for (const r of replicas.splice(0)) await r.stop();
    await service?.stop();
    service = undefined;
    for (const s of subscriptions) s.unsubscribe();
    await nc.close();
    await db.end();
    await mail?.stop();
    await database.drop();
    await deleteEventStream(root, natsUrl);
  };

  try {
    service = await start(firstExtra as Extra[N]);
  } catch (err) {
    await cleanup();
    throw err;
  }

  const call = async <O extends AnyOperation>(
    op: O,
    meta: MetaFor<O>,
    data: DataFor<O>,
  ): Promise<ReplyMessage<ReplyFor<O>>> => {
    if (op.service !== name) throw new Error(`${op.operation} belongs to ${op.service}; this runner runs ${name}`);
    const requestId = (meta as { request_id?: unknown }).request_id;
    return callService<ReplyFor<O>>(
      nc,
      subjects.op(op.service, op.operation),
      { meta, data },
      typeof requestId === 'string' ? requestId : 'test',
      CALL_TIMEOUT_MS,
    );
  };

  const runner: ServiceRunner<N> = {
    name,
    get service(): Running[N] {
      if (!service) throw new Error(`${name} is not running`);
      return service;
    },
    db,
    clock,
    subjects,
    env,
    mail,
    call,
    async request(op, meta, data) {
      const reply = await call(op, meta, data);
      if (!reply.ok) {
        const { code, message, ...details } = reply.error;
        throw new AppError(code, message, details);
      }
      return reply.data;
    },
    async fake<O extends InternalOperation>(op: O, handler: FakeHandler<O>): Promise<Fake<O>> {
      if (op.service === name) throw new Error(`${op.operation} is ${name}'s own operation; it cannot be faked here`);
      const subject = subjects.op(op.service, op.operation);
      const metaSchema = (op.meta ?? ServiceMeta) as z.ZodType<FakeMeta<O>>;
      const requestSchema = op.request as z.ZodType<z.output<O['request']>>;
      let current = handler;
      const fake: Fake<O> = {
        calls: [],
        answer(next) {
          current = next;
        },
      };
      const answer = async (raw: Uint8Array): Promise<ReplyMessage> => {
        // Checked as the owning service checks it: a request outside the contract is the caller's bug.
        const message = jsonCodec.decode(raw) as { meta?: unknown; data?: unknown };
        const meta = metaSchema.safeParse(message.meta);
        const data = requestSchema.safeParse(message.data ?? {});
        if (!meta.success || !data.success) {
          const issues = [...(meta.error?.issues ?? []), ...(data.error?.issues ?? [])];
          return {
            ok: false,
            error: new AppError('validation_error', undefined, {
              fields: issues.map((i) => ({ field: i.path.join('.'), message: i.message })),
            }).toBody(),
          };
        }
        fake.calls.push({ meta: meta.data, data: data.data });
        try {
          const out = op.reply.safeParse(await current(data.data, meta.data));
          if (out.success) return { ok: true, data: out.data };
          violations.push(`fake ${subject} answered outside its contract: ${out.error.message}`);
        } catch (err) {
          if (err instanceof AppError) return { ok: false, error: err.toBody() };
          violations.push(`fake ${subject} failed: ${(err as Error).message}`);
        }
        return { ok: false, error: new AppError('internal_error').toBody() };
      };
      const sub = nc.subscribe(subject, {
        callback: (_err, msg) => {
          void answer(msg.data).then((reply) => {
            const h = natsHeaders();
            h.set(REQUEST_ID_HEADER, msg.headers?.get(REQUEST_ID_HEADER) || 'none');
            msg.respond(jsonCodec.encode(reply), { headers: h });
          });
        },
      });
      subscriptions.push(sub);
      // The subscription is at the server before the test goes on to make the service call it.
      await nc.flush();
      return fake;
    },
    async restart(extra = {} as Extra[N]) {
      await service?.stop();
      service = undefined;
      service = await start(extra);
    },
    async replica(extra = {} as Extra[N]) {
      const started = await start(extra);
      let stopped: Promise<void> | undefined;
      // Stopping twice (by the test, then by stop()) stops once.
      const r = { ...started, stop: () => (stopped ??= started.stop()) };
      replicas.push(r);
      return r;
    },
    async stop() {
      await cleanup();
      if (violations.length > 0) throw new Error(violations.join('\n'));
    },
  };
  return runner;
}
