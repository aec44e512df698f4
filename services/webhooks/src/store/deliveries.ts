import { returnedRow } from '@loyalty/runtime';
import type { Queryable } from '@loyalty/runtime';
import type { WebhookEvent } from '../domain/payload.ts';

/** Times as ISO text in array parameters: pg's conversion of each Date costs more than the statement's share. */
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** A delivery a replica holds to send: the event's body, where it goes is the dispatcher's lane. */
export interface Job {
  deliveryId: number;
  tenantId: number;
  endpointId: number;
  eventId: string;
  type: string;
  body: string;
  /** Attempts made before this one. */
  attempts: number;
  expiresAt: Date;
  /** The event's own time (event-to-delivery latency). */
  eventCreatedAt: Date;
  /** This replica owns it until then (next_attempt_at in the row). */
  leaseUntil: Date;
  /** The trace of the operation behind the event (tracing on): every attempt is a span of it. */
  trace: string | null;
}

/** One new delivery: an event to an endpoint, due (or leased) at `nextAttemptAt`. */
export interface NewDelivery {
  event: WebhookEvent;
  endpointId: number;
  nextAttemptAt: Date;
}

/**
 * The events and their deliveries in one statement (one round trip, atomic without BEGIN/COMMIT).
 * An event or a delivery already there (a redelivered JetStream message) is left as it is and not
 * returned, so only what this call created is handed to a sender.
 */
export async function insertDeliveries(
  db: Queryable,
  deliveries: NewDelivery[],
  now: Date,
  windowMs: number,
): Promise<{ id: number; endpoint_id: number; event_id: string }[]> {
  if (deliveries.length === 0) return [];
  const events = [...new Map(deliveries.map((d) => [d.event.id, d.event])).values()];
  const expiresAt = new Date(now.getTime() + windowMs);
  const { rows } = await db.query<{ id: number; endpoint_id: number; event_id: string }>(
    `WITH ev AS (
       INSERT INTO webhooks.events (id, tenant_id, type, body, created_at, received_at, trace)
       SELECT id, tenant_id, type, body, created_at, $6, trace FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $12::text[])
         AS e(id, tenant_id, type, body, created_at, trace)
       ON CONFLICT (id) DO NOTHING
     )
     INSERT INTO webhooks.deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, expires_at, created_at)
     SELECT tenant_id, endpoint_id, event_id, next_attempt_at, $10, $6
       FROM unnest($7::bigint[], $8::uuid[], $9::timestamptz[], $11::bigint[]) AS d(endpoint_id, event_id, next_attempt_at, tenant_id)
     ON CONFLICT (event_id, endpoint_id) DO NOTHING
     RETURNING id, endpoint_id, event_id::text AS event_id`,
    [
      events.map((e) => e.id),
      events.map((e) => e.tenant_id),
      events.map((e) => e.type),
      events.map((e) => e.body),
      events.map((e) => iso(e.created_at)),
      now,
      deliveries.map((d) => d.endpointId),
      deliveries.map((d) => d.event.id),
      deliveries.map((d) => iso(d.nextAttemptAt)),
      expiresAt,
      deliveries.map((d) => d.event.tenant_id),
      events.map((e) => e.trace ?? null),
    ],
  );
  return rows;
}

interface JobRow {
  id: number;
  tenant_id: number;
  endpoint_id: number;
  event_id: string;
  attempt_count: number;
  expires_at: Date;
  next_attempt_at: Date;
  type: string;
  body: string;
  event_created_at: Date;
  trace: string | null;
}

const jobOf = (r: JobRow): Job => ({
  deliveryId: r.id,
  tenantId: r.tenant_id,
  endpointId: r.endpoint_id,
  eventId: r.event_id,
  type: r.type,
  body: r.body,
  attempts: r.attempt_count,
  expiresAt: r.expires_at,
  eventCreatedAt: r.event_created_at,
  leaseUntil: r.next_attempt_at,
  trace: r.trace,
});

/**
 * The endpoints with a delivery due at `now`, the longest waiting first. A loose index scan of
 * `deliveries_due` (endpoint, due time): one probe per endpoint with pending deliveries, however
 * many each has, so a dead endpoint's large backlog costs one probe, not a scan.
 */
export async function dueEndpoints(db: Queryable, now: Date, limit: number): Promise<number[]> {
  const { rows } = await db.query<{ endpoint_id: number }>(
    `WITH RECURSIVE e AS (
       (SELECT endpoint_id, next_attempt_at FROM webhooks.deliveries
         WHERE status = 'pending' ORDER BY endpoint_id, next_attempt_at LIMIT 1)
       UNION ALL
       SELECT n.endpoint_id, n.next_attempt_at FROM e CROSS JOIN LATERAL (
         SELECT endpoint_id, next_attempt_at FROM webhooks.deliveries
          WHERE status = 'pending' AND endpoint_id > e.endpoint_id ORDER BY endpoint_id, next_attempt_at LIMIT 1) n
     )
     SELECT endpoint_id FROM e WHERE next_attempt_at <= $1
        -- A paused tenant's deliveries wait (tenant_states).
        AND NOT EXISTS (SELECT 1 FROM webhooks.endpoints x JOIN webhooks.tenant_states p ON p.tenant_id = x.tenant_id
                         WHERE x.id = e.endpoint_id AND p.paused)
      ORDER BY next_attempt_at LIMIT $2`,
    [now, limit],
  );
  return rows.map((r) => r.endpoint_id);
}

/**
 * Take due deliveries, oldest due first, up to a number per endpoint (what its lane has room
 * for), leasing them to this replica until `leaseUntil`. Rows another replica is taking are
 * skipped (FOR UPDATE SKIP LOCKED), so every replica can take at once.
 */
export async function claimDue(
  db: Queryable,
  now: Date,
  leaseUntil: Date,
  quotas: { endpointId: number; limit: number }[],
): Promise<Job[]> {
  if (quotas.length === 0) return [];
  const { rows } = await db.query<JobRow>(
    `WITH due AS (
       SELECT d.id FROM unnest($3::bigint[], $4::int[]) AS q(endpoint_id, lim)
       CROSS JOIN LATERAL (
         SELECT id FROM webhooks.deliveries
          WHERE endpoint_id = q.endpoint_id AND status = 'pending' AND next_attempt_at <= $1
          ORDER BY next_attempt_at LIMIT q.lim FOR UPDATE SKIP LOCKED) d
     ), claimed AS (
       UPDATE webhooks.deliveries d SET next_attempt_at = $2 FROM due WHERE d.id = due.id
       RETURNING d.id, d.tenant_id, d.endpoint_id, d.event_id, d.attempt_count, d.expires_at, d.next_attempt_at
     )
     SELECT c.*, c.event_id::text AS event_id, e.type, e.body, e.created_at AS event_created_at, e.trace
       FROM claimed c JOIN webhooks.events e ON e.id = c.event_id
      ORDER BY c.id`,
    [now, leaseUntil, quotas.map((q) => q.endpointId), quotas.map((q) => q.limit)],
  );
  return rows.map(jobOf);
}

/** Lease one delivery of the tenant to this replica now (redelivery, ping); undefined: not the tenant's. */
export async function leaseDelivery(
  db: Queryable,
  tenantId: number,
  deliveryId: number,
  leaseUntil: Date,
  expiresAt: Date,
): Promise<Job | undefined> {
  const { rows } = await db.query<JobRow>(
    `WITH d AS (
       UPDATE webhooks.deliveries SET status = 'pending', next_attempt_at = $3, expires_at = $4,
              delivered_at = NULL, failed_at = NULL
        WHERE tenant_id = $1 AND id = $2
       RETURNING id, tenant_id, endpoint_id, event_id, attempt_count, expires_at, next_attempt_at
     )
     SELECT d.*, d.event_id::text AS event_id, e.type, e.body, e.created_at AS event_created_at, e.trace
       FROM d JOIN webhooks.events e ON e.id = d.event_id`,
    [tenantId, deliveryId, leaseUntil, expiresAt],
  );
  return rows[0] && jobOf(rows[0]);
}

/** The outcome of one attempt (or of no attempt: `attempted` false hands a lease back or gives up). */
export interface Outcome {
  deliveryId: number;
  endpointId: number;
  /** pending: try again at `nextAttemptAt`; delivered; failed: given up. */
  status: 'pending' | 'delivered' | 'failed';
  nextAttemptAt: Date | null;
  attempted: boolean;
  attemptedAt: Date;
  durationMs: number;
  httpStatus: number | null;
  error: string | null;
}

/**
 * Many outcomes in one statement: each delivery's new state, its attempt row, and the endpoints'
 * failure streaks (`failing_since` set on the first failure after a success, cleared by a success;
 * rows change only on such a transition, so a busy endpoint's row is not rewritten per attempt).
 * A delivery that is no longer pending (given up meanwhile: endpoint disabled or deleted) keeps
 * its state; its attempt is still logged.
 */
export async function recordOutcomes(db: Queryable, outcomes: Outcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  const attempted = outcomes.filter((o) => o.attempted);
  const succeeded = [...new Set(attempted.filter((o) => o.status === 'delivered').map((o) => o.endpointId))].sort(
    (a, b) => a - b,
  );
  const failedAt = new Map<number, Date>();
  for (const o of attempted) {
    if (o.status === 'delivered' || succeeded.includes(o.endpointId)) continue;
    const seen = failedAt.get(o.endpointId);
    if (!seen || o.attemptedAt < seen) failedAt.set(o.endpointId, o.attemptedAt);
  }
  const failing = [...failedAt].sort((a, b) => a[0] - b[0]);
  await db.query(
    `WITH o AS (
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::boolean[], $6::text[])
         AS o(id, status, next_at, attempted_at, attempted, error)
     ), d AS (
       UPDATE webhooks.deliveries d SET
         status = o.status,
         attempt_count = d.attempt_count + o.attempted::int,
         next_attempt_at = o.next_at,
         delivered_at = CASE WHEN o.status = 'delivered' THEN o.attempted_at END,
         failed_at = CASE WHEN o.status = 'failed' THEN o.attempted_at END,
         last_error = coalesce(o.error, d.last_error)
       FROM o WHERE d.id = o.id AND d.status = 'pending'
       RETURNING d.id
     ), a AS (
       INSERT INTO webhooks.attempts (delivery_id, attempted_at, duration_ms, http_status, error)
       SELECT * FROM unnest($7::bigint[], $8::timestamptz[], $9::int[], $10::int[], $11::text[])
     ), ok AS (
       UPDATE webhooks.endpoints SET failing_since = NULL WHERE id = ANY($12::bigint[]) AND failing_since IS NOT NULL
     ), bad AS (
       UPDATE webhooks.endpoints e SET failing_since = f.since
         FROM unnest($13::bigint[], $14::timestamptz[]) AS f(id, since)
        WHERE e.id = f.id AND e.failing_since IS NULL
     )
     SELECT count(*) FROM d`,
    [
      outcomes.map((o) => o.deliveryId),
      outcomes.map((o) => o.status),
      outcomes.map((o) => iso(o.nextAttemptAt)),
      outcomes.map((o) => iso(o.attemptedAt)),
      outcomes.map((o) => o.attempted),
      outcomes.map((o) => o.error),
      attempted.map((o) => o.deliveryId),
      attempted.map((o) => iso(o.attemptedAt)),
      attempted.map((o) => o.durationMs),
      attempted.map((o) => o.httpStatus),
      attempted.map((o) => o.error),
      succeeded,
      failing.map(([id]) => id),
      failing.map(([, at]) => iso(at)),
    ],
  );
}

/** Give up an endpoint's pending deliveries (it was disabled or deleted). */
export async function failPending(db: Queryable, endpointIds: number[], now: Date, reason: string): Promise<number> {
  if (endpointIds.length === 0) return 0;
  const r = await db.query(
    `UPDATE webhooks.deliveries SET status = 'failed', failed_at = $2, next_attempt_at = NULL, last_error = $3
      WHERE endpoint_id = ANY($1::bigint[]) AND status = 'pending'`,
    [endpointIds, now, reason],
  );
  return r.rowCount ?? 0;
}

/** A delivery of the log: the delivery, its event and its attempts. */
export interface LoggedDelivery {
  id: number;
  endpoint_id: number;
  status: 'pending' | 'delivered' | 'failed';
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  failed_at: Date | null;
  created_at: Date;
  event_id: string;
  event_type: string;
  event_created_at: Date;
  body: string;
  attempts: { attempted_at: Date; duration_ms: number; http_status: number | null; error: string | null }[];
}

const LOG_COLUMNS = `d.id, d.endpoint_id, d.status, d.next_attempt_at, d.delivered_at, d.failed_at, d.created_at,
  d.event_id::text AS event_id, e.type AS event_type, e.created_at AS event_created_at, e.body,
  coalesce((SELECT json_agg(json_build_object('attempted_at', a.attempted_at, 'duration_ms', a.duration_ms,
                    'http_status', a.http_status, 'error', a.error) ORDER BY a.attempted_at)
              FROM webhooks.attempts a WHERE a.delivery_id = d.id), '[]'::json) AS attempts`;

type LogRow = Omit<LoggedDelivery, 'attempts'> & {
  attempts: { attempted_at: string; duration_ms: number; http_status: number | null; error: string | null }[];
};
const logged = (r: LogRow): LoggedDelivery => ({
  ...r,
  attempts: r.attempts.map((a) => ({ ...a, attempted_at: new Date(a.attempted_at) })),
});

/** An endpoint's deliveries, newest first, with the total for the pagination. */
export async function listDeliveries(
  db: Queryable,
  endpointId: number,
  q: { status?: string; limit: number; offset: number },
): Promise<{ deliveries: LoggedDelivery[]; total: number }> {
  const where = `d.endpoint_id = $1${q.status ? ' AND d.status = $4' : ''}`;
  const params: unknown[] = [endpointId, q.limit, q.offset, ...(q.status ? [q.status] : [])];
  const [page, count] = await Promise.all([
    db.query<LogRow>(
      `SELECT ${LOG_COLUMNS} FROM webhooks.deliveries d JOIN webhooks.events e ON e.id = d.event_id
        WHERE ${where} ORDER BY d.id DESC LIMIT $2 OFFSET $3`,
      params,
    ),
    db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhooks.deliveries d WHERE ${where.replace('$4', '$2')}`,
      q.status ? [endpointId, q.status] : [endpointId],
    ),
  ]);
  return { deliveries: page.rows.map(logged), total: returnedRow(count.rows, 'a count').n };
}

export async function findDelivery(db: Queryable, tenantId: number, id: number): Promise<LoggedDelivery | undefined> {
  const { rows } = await db.query<LogRow>(
    `SELECT ${LOG_COLUMNS} FROM webhooks.deliveries d JOIN webhooks.events e ON e.id = d.event_id
      WHERE d.tenant_id = $1 AND d.id = $2`,
    [tenantId, id],
  );
  return rows[0] && logged(rows[0]);
}

/**
 * Pending deliveries and the age of the oldest, for the `top` tenants with the most pending (by
 * tenant id, as text) and summed up for all the others as `other` (its age: their oldest). At
 * most `top + 1` rows however many tenants there are (metrics).
 */
export async function backlogByTenant(
  db: Queryable,
  now: Date,
  top: number,
): Promise<{ tenant: string; pending: number; oldest_s: number }[]> {
  const { rows } = await db.query<{ tenant: string; pending: number; oldest_s: number }>(
    `WITH per_tenant AS (
       SELECT tenant_id, count(*) AS pending, min(created_at) AS oldest
         FROM webhooks.deliveries WHERE status = 'pending' GROUP BY tenant_id
     ), ranked AS (
       SELECT *, row_number() OVER (ORDER BY pending DESC, tenant_id) AS rank FROM per_tenant
     )
     SELECT CASE WHEN rank <= $2 THEN tenant_id::text ELSE 'other' END AS tenant,
            sum(pending)::int AS pending, extract(epoch FROM $1::timestamptz - min(oldest))::float8 AS oldest_s
       FROM ranked GROUP BY 1`,
    [now, top],
  );
  return rows;
}
