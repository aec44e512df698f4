import {
  AppError,
  AUDIT_ANCHORED_EVENT,
  AuditEntry,
  queryDateRange,
  type AuditActor,
  type AuditAnchor,
  type DomainEvent,
  type StaffMeta,
} from '@loyalty/contracts';
import {
  PeriodicTask,
  withTransaction,
  type Clock,
  type Logger,
  type Outbox,
  type Pool,
  type PoolClient,
} from '@loyalty/runtime';
import {
  anchorToken,
  ChainVerifier,
  parseAnchorToken,
  type AuditKeyring,
  type SignedAnchor,
} from '../domain/audit-chain.ts';
import {
  appendRow,
  chainPage,
  findHead,
  insertAnchor,
  isRecorded,
  listRows,
  lockHead,
  tenantAnchors,
  unanchoredHeads,
} from '../store/audit.ts';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** Rows read per page while a chain is verified. */
const VERIFY_PAGE = 1000;
/** Chain heads anchored per transaction page of an anchoring pass. */
const ANCHOR_PAGE = 200;
/** What the actor filter matches: a staff user's email, an app's id, or `operator`. */
const actorKey = (a: AuditActor) => (a.type === 'staff' ? a.email : a.type === 'app' ? a.id : 'operator');

interface AuditDeps {
  pool: Pool;
  clock: Clock;
  log: Logger;
  /** AUDIT_KEY (and AUDIT_PREVIOUS_KEYS): keys new rows and anchors, verifies old ones. */
  keyring: AuditKeyring;
  /** Where anchors are published (`audit_anchored`); without it (benchmarks) nothing is anchored. */
  outbox?: Outbox;
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
        entries: rows.map(({ tenant_id: _t, event_id: _e, key_id: _k, details_digest: _d, ...row }) => ({
          ...row,
          details: row.details ?? {},
        })),
        pagination: { limit: q.limit, offset: q.offset, total, has_more: q.offset + rows.length < total },
      };
    },

    /**
     * Walk the tenant's chain page by page and compare its end with the head, and the rows with
     * every signed anchor: identity's own and `anchor` (a token kept outside) when given.
     */
    async verify(tenantId: number, anchor?: string) {
      const anchors = await signedAnchors(deps, tenantId, anchor);
      const head = await findHead(deps.pool, tenantId);
      const verifier = new ChainVerifier(deps.keyring, anchors);
      let after = 0;
      for (;;) {
        const rows = await chainPage(deps.pool, tenantId, after, VERIFY_PAGE);
        for (const row of rows) verifier.add(row);
        const last = rows.at(-1);
        if (rows.length < VERIFY_PAGE || verifier.problem || !last) break;
        after = last.seq;
      }
      const problem = verifier.finish(head);
      return {
        valid: problem === null,
        rows_checked: verifier.checked,
        head,
        problem,
        legacy_rows: verifier.legacyRows,
        keyed_from: verifier.keyedFrom,
        erased_details: verifier.erasedDetails,
        anchors_checked: anchors.size,
      };
    },

    /** One anchoring pass over every tenant (the anchor task runs it): how many heads were anchored. */
    anchorHeads: (): Promise<number> => anchorHeads(deps),
  };
}

/**
 * The anchors to check a tenant's chain against, by sequence number: the stored ones whose
 * signature verifies (one that does not was not written by identity and proves nothing), and the
 * one given, which must be a signed anchor of this tenant.
 */
async function signedAnchors(deps: AuditDeps, tenantId: number, token?: string): Promise<Map<number, SignedAnchor>> {
  const anchors = new Map<number, SignedAnchor>();
  for (const a of await tenantAnchors(deps.pool, tenantId))
    if (a.tenant_id === tenantId && deps.keyring.anchorSigned(a)) anchors.set(a.seq, a);
  if (token !== undefined) {
    const given = parseAnchorToken(token);
    if (!given || given.tenant_id !== tenantId || !deps.keyring.anchorSigned(given))
      throw new AppError('audit_anchor_invalid');
    anchors.set(given.seq, given);
  }
  return anchors;
}

/**
 * Anchor every chain head that moved since its tenant's last anchor: sign it, store it and write
 * its `audit_anchored` event in one transaction per page (the outbox publishes it after the
 * commit; the webhooks service delivers it as `audit.anchored`), then log each one. Replicas may
 * run it at once: a head anchored by another replica meanwhile is skipped.
 */
async function anchorHeads(deps: AuditDeps): Promise<number> {
  const { outbox } = deps;
  if (!outbox) throw new Error('anchoring needs the outbox');
  let anchored = 0;
  let after = 0;
  for (;;) {
    const heads = await unanchoredHeads(deps.pool, after, ANCHOR_PAGE);
    if (heads.length === 0) return anchored;
    const written = await withTransaction(deps.pool, async (db) => {
      const out: (SignedAnchor & { token: string })[] = [];
      for (const head of heads) {
        const now = deps.clock.now();
        const content = { ...head, anchored_at: now.toISOString() };
        const signature = deps.keyring.anchorSignature(content);
        if (signature === undefined) throw new Error('the current audit key is missing from its keyring');
        const anchor: SignedAnchor = { ...content, key_id: deps.keyring.currentId, signature };
        if (!(await insertAnchor(db, anchor))) continue;
        const published = { ...anchor, token: anchorToken(anchor) };
        const { tenant_id: tenantId, ...data } = published;
        const event: AuditAnchor = data;
        await outbox.record(db, { type: AUDIT_ANCHORED_EVENT, tenantId, data: event, occurredAt: now });
        out.push(published);
      }
      return out;
    });
    for (const a of written) deps.log.info({ audit_anchor: a }, 'audit chain anchored');
    anchored += written.length;
    const last = heads.at(-1);
    if (heads.length < ANCHOR_PAGE || !last) return anchored;
    after = last.tenant_id;
  }
}

/**
 * The anchor task: every `intervalMs`, each replica anchors the heads that moved (a pass is cheap
 * when none did: one query).
 */
export function auditAnchorTask(audit: ReturnType<typeof auditLog>, intervalMs: number, log: Logger) {
  return new PeriodicTask({ name: 'audit-anchors', intervalMs, log, run: () => audit.anchorHeads() });
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
    ...deps.keyring.seal(content),
    actor_key: actorKey(entry.actor),
    recorded_at: deps.clock.now(),
  });
}
