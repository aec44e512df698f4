import { AppError, memberMergeInternalOperations, type Meta, type StaffMeta } from '@loyalty/contracts';
import {
  auditActor,
  jobView,
  recordAudit,
  withTransaction,
  type Clock,
  type JobHandler,
  type JobStore,
  type Outbox,
  type Pool,
  type PoolClient,
  type ServiceClient,
} from '@loyalty/runtime';
import { revokeMemberSessions } from '../store/sessions.ts';

export const MERGE_JOB = 'member.merge';

/** The services asked for their part of a merge, in this order (the ledger first: holds follow lots). */
const PARTS = [
  memberMergeInternalOperations.ledgerMerge,
  memberMergeInternalOperations.claimsMerge,
  memberMergeInternalOperations.referralsMerge,
] as const;

/** Where a merge job is: the next of PARTS to ask, and what the parts before moved. */
interface MergeCheckpoint {
  next: number;
  moved: Record<string, Record<string, number>>;
}

export interface MemberMergeDeps {
  pool: Pool;
  clock: Clock;
  outbox: Outbox;
  jobs: { store: JobStore; wake(): void };
  client: ServiceClient;
  /** Told after the merge request committed: every gateway forgets the source's tokens. */
  sessionEnded: (tenantId: number, sessionId: number) => void;
  /** Told after the merge request committed: every ledger replica forgets the source. */
  memberErased: (tenantId: number, memberId: number) => void;
}

interface MemberRow {
  id: number;
  email: string | null;
  phone: string | null;
  tombstone: boolean;
}

/**
 * Merging a duplicate member (the source) into another (the target) of the same tenant. The
 * request makes the source a tombstone at once, in one transaction with its job and its audit
 * entry: `erased_at` set and `merged_into` pointing at the target, its email or phone given to the
 * target where the target has none and its personal data gone from its row, sessions revoked,
 * codes deleted. The job then asks each service for its part, one committed step each (commit,
 * call, commit; every part is idempotent by state, so a step repeated after a crash moves nothing
 * more), and ends with `member_merged`. A repeated request for the same pair answers the same job.
 */
export function memberMerges(deps: MemberMergeDeps) {
  const { pool, clock, jobs } = deps;

  async function request(targetId: number, sourceId: number, meta: Meta | StaffMeta) {
    if (targetId === sourceId) throw new AppError('merge_into_itself');
    const now = clock.now();
    const outcome = await withTransaction(pool, async (db) => {
      const { rows } = await db.query<MemberRow>(
        `SELECT id, email, phone, erased_at IS NOT NULL AS tombstone FROM identity.members
          WHERE tenant_id = $1 AND id = ANY($2::bigint[]) ORDER BY id FOR UPDATE`,
        [meta.tenant_id, [targetId, sourceId]],
      );
      const target = rows.find((r) => Number(r.id) === targetId);
      const source = rows.find((r) => Number(r.id) === sourceId);
      if (!target || target.tombstone) throw new AppError('member_not_found');
      const earlier = await db.query<{ target_member_id: number; job_id: string }>(
        'SELECT target_member_id, job_id FROM identity.member_merges WHERE source_member_id = $1 AND tenant_id = $2',
        [sourceId, meta.tenant_id],
      );
      const existing = earlier.rows[0];
      if (existing && Number(existing.target_member_id) === targetId)
        return { jobId: await againIfFailed(deps, db, existing.job_id), sessions: [] };
      if (!source || source.tombstone) throw new AppError('member_not_found');
      const jobId = await jobs.store.create(db, {
        tenantId: meta.tenant_id,
        kind: MERGE_JOB,
        params: { source_member_id: sourceId, target_member_id: targetId },
        now,
      });
      await db.query(
        `INSERT INTO identity.member_merges (tenant_id, source_member_id, target_member_id, job_id, requested_at)
         VALUES ($1, $2, $3, $4, $5)`,
        [meta.tenant_id, sourceId, targetId, jobId, now],
      );
      await tombstone(db, source, target, now);
      await db.query('DELETE FROM identity.otps WHERE member_id = $1', [sourceId]);
      await recordAudit(deps.outbox, db, meta.tenant_id, {
        actor: auditActor(meta),
        action: 'member.merged',
        target: { member_id: targetId, source_member_id: sourceId, job_id: jobId },
        request_id: meta.request_id,
      });
      return { jobId, sessions: await revokeMemberSessions(db, sourceId, now) };
    });
    for (const session of outcome.sessions) deps.sessionEnded(meta.tenant_id, session);
    deps.memberErased(meta.tenant_id, sourceId);
    jobs.wake();
    const job = await jobs.store.find(meta.tenant_id, outcome.jobId);
    if (!job) throw new Error(`merge job ${outcome.jobId} vanished`);
    return jobView(jobs.store, job, '/api/v1', clock.now());
  }

  return { request, run: mergeJob(deps) };
}

/** The job: one service's part per step, then the merge's end and its event. */
function mergeJob(deps: MemberMergeDeps): JobHandler<MergeCheckpoint> {
  return async (step) => {
    const { source, target } = membersOf(step.params);
    const next = step.checkpoint?.next ?? 0;
    const moved = step.checkpoint?.moved ?? {};
    const total = PARTS.length + 1;
    const part = PARTS[next];
    if (part) {
      const answer = await deps.client.call(
        part,
        { request_id: `${step.id}:${next}`, tenant_id: step.tenantId, idempotency_key: `${step.id}:${part.service}` },
        { source_member_id: source, target_member_id: target },
      );
      // A repeated step (after a crash between its call and its commit) moved nothing more: keep the first figures.
      const figures = moved[part.service] ?? answer.moved;
      await step.commit(undefined, {
        checkpoint: { next: next + 1, moved: { ...moved, [part.service]: figures } },
        done: next + 1,
        total,
      });
      return 'more';
    }
    const result = { source_member_id: source, target_member_id: target, moved };
    await step.succeed((db) => finish(deps, db, step.tenantId, result), {
      done: total,
      total,
      result: { contentType: 'application/json', data: Buffer.from(JSON.stringify(result)) },
    });
    return 'finished';
  };
}

/**
 * The same pair asked again answers its job; a job that failed (a service down for all its
 * attempts) is started again, its parts being idempotent by state.
 */
async function againIfFailed(deps: MemberMergeDeps, db: PoolClient, jobId: string): Promise<string> {
  const job = await deps.jobs.store.find(undefined, jobId);
  if (job?.status !== 'failed') return jobId;
  const again = await deps.jobs.store.create(db, {
    tenantId: Number(job.tenant_id),
    kind: MERGE_JOB,
    params: job.params,
    now: deps.clock.now(),
  });
  await db.query('UPDATE identity.member_merges SET job_id = $2 WHERE job_id = $1', [jobId, again]);
  return again;
}

/**
 * The source becomes a tombstone pointing at the target: the target takes its email or phone
 * where it has none (merchants merge the member known by email at the till with the one known by
 * phone online); the source keeps no personal data.
 */
async function tombstone(db: PoolClient, source: MemberRow, target: MemberRow, now: Date): Promise<void> {
  await db.query(
    `UPDATE identity.members SET erased_at = $2, merged_into = $3, name = '', email = NULL, phone = NULL,
            accepts_emails = false, is_active = false
      WHERE id = $1`,
    [source.id, now, target.id],
  );
  const email = target.email === null ? source.email : null;
  const phone = target.phone === null ? source.phone : null;
  if (email !== null || phone !== null)
    await db.query(
      'UPDATE identity.members SET email = COALESCE(email, $2), phone = COALESCE(phone, $3) WHERE id = $1',
      [target.id, email, phone],
    );
}

function membersOf(params: unknown): { source: number; target: number } {
  const p = typeof params === 'object' && params !== null ? params : {};
  const source = 'source_member_id' in p ? p.source_member_id : undefined;
  const target = 'target_member_id' in p ? p.target_member_id : undefined;
  if (typeof source !== 'number' || typeof target !== 'number') throw new Error('a merge job without its members');
  return { source, target };
}

/** The merge's last transaction: its record completed and `member_merged` published. */
async function finish(
  deps: Pick<MemberMergeDeps, 'outbox' | 'clock'>,
  db: PoolClient,
  tenantId: number,
  result: { source_member_id: number; target_member_id: number; moved: MergeCheckpoint['moved'] },
): Promise<void> {
  const now = deps.clock.now();
  await db.query(
    'UPDATE identity.member_merges SET completed_at = $3, moved = $4 WHERE tenant_id = $1 AND source_member_id = $2',
    [tenantId, result.source_member_id, now, JSON.stringify(result.moved)],
  );
  await deps.outbox.record(db, {
    type: 'member_merged',
    tenantId,
    occurredAt: now,
    data: {
      source_member_id: result.source_member_id,
      target_member_id: result.target_member_id,
      merged_at: now.toISOString(),
    },
  });
}
