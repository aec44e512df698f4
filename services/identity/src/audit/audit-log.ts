import { AuditEntry, queryDateRange, type AuditActor, type DomainEvent, type StaffMeta } from '@loyalty/contracts';
import type { Clock, Logger, Pool, PoolClient } from '@loyalty/runtime';
import { ChainVerifier, rowHash } from '../domain/audit-chain.ts';
import { appendRow, chainPage, findHead, isRecorded, listRows, lockHead } from '../store/audit.ts';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Rows read per page while a chain is verified. */
const VERIFY_PAGE = 1000;
/** What the actor filter matches: a staff user's email, an app's id, or `operator`. */
const actorKey = (a: AuditActor) => (a.type === 'staff' ? a.email : a.type === 'app' ? a.id : 'operator');

interface AuditDeps {
  pool: Pool;
  clock: Clock;
  log: Logger;
}

/**
 * The audit log: identity consumes every service's `audit_recorded` events and appends each to its
 * tenant's hash chain, under the tenant's head row lock (appends of a tenant are serialized; other
 * tenants' go on). The consumer records the event id in the same transaction, and the log's unique
 * event id backs that up, so a redelivered event is appended once.
 */
export function auditLog(deps: AuditDeps) {
  return {
    /** The consumer's handler (runs in the consumer's transaction `db`). */
    append: (event: DomainEvent, db: PoolClient): Promise<void> => appendEvent(deps, event, db),

    async list(
      q: { actor?: string; action?: string; from?: string; to?: string; limit: number; offset: number },
      meta: StaffMeta,
    ) {
      const { rows, total } = await listRows(deps.pool, {
        tenantId: meta.tenant_id,
        actor: q.actor,
        action: q.action,
        ...queryDateRange(q),
        limit: q.limit,
        offset: q.offset,
      });
      return {
        entries: rows.map(({ tenant_id: _t, event_id: _e, ...row }) => row),
        pagination: { limit: q.limit, offset: q.offset, total, has_more: q.offset + rows.length < total },
      };
    },

    /** Walk the tenant's chain page by page and compare its end with the head. */
    async verify(tenantId: number) {
      const head = await findHead(deps.pool, tenantId);
      const verifier = new ChainVerifier();
      let after = 0;
      for (;;) {
        const rows = await chainPage(deps.pool, tenantId, after, VERIFY_PAGE);
        for (const row of rows) verifier.add(row);
        const last = rows.at(-1);
        if (rows.length < VERIFY_PAGE || verifier.problem || !last) break;
        after = last.seq;
      }
      const problem = verifier.finish(head);
      return { valid: problem === null, rows_checked: verifier.checked, head, problem };
    },
  };
}

async function appendEvent(deps: AuditDeps, event: DomainEvent, db: PoolClient): Promise<void> {
  const parsed = AuditEntry.safeParse(event.data);
  if (!parsed.success || !Number.isSafeInteger(event.tenant_id)) {
    // Every service checks the entry before writing it; a malformed one is a bug to look at.
    deps.log.error({ event: event.id, type: event.type, issues: parsed.error?.issues }, 'malformed audit event');
    return;
  }
  const entry = parsed.data;
  const head = await lockHead(db, event.tenant_id);
  if (await isRecorded(db, event.id)) return;
  const occurredAt = ISO_MS.test(event.occurred_at)
    ? event.occurred_at
    : new Date(Date.parse(event.occurred_at) || deps.clock.now().getTime()).toISOString();
  const content = {
    tenant_id: event.tenant_id,
    seq: head.seq + 1,
    event_id: event.id,
    service: event.type.split('.')[0] ?? 'unknown',
    occurred_at: occurredAt,
    actor: entry.actor,
    action: entry.action,
    target: entry.target,
    amounts: entry.amounts,
    details: entry.details,
    request_id: entry.request_id,
    prev_hash: head.hash,
  };
  await appendRow(db, {
    ...content,
    actor_key: actorKey(entry.actor),
    hash: rowHash(content),
    recorded_at: deps.clock.now(),
  });
}
