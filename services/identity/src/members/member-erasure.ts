import { AppError, memberDataInternalOperations, type Meta, type PersonalData } from '@loyalty/contracts';
import {
  erasePersonalTextInSharedTables,
  jobView,
  personalPattern,
  rewritePersonalText,
  withTransaction,
  type Clock,
  type JobHandler,
  type JobStore,
  type Outbox,
  type Pool,
  type PoolClient,
  type ServiceClient,
} from '@loyalty/runtime';
import { eraseMemberDetails } from '../store/audit.ts';
import { EXPORT_JOB } from './member-export.ts';
import { revokeMemberSessions } from '../store/sessions.ts';

export const ERASE_JOB = 'member.erase';

/**
 * The services asked for their part of an erasure, in this order; identity's own part comes
 * last, with the job's end, so that the personal data the others look for is kept until then.
 */
const PARTS = [
  memberDataInternalOperations.ledgerErase,
  memberDataInternalOperations.claimsErase,
  memberDataInternalOperations.referralsErase,
  memberDataInternalOperations.webhooksErase,
] as const;

/** Where an erasure job is: the next of PARTS to ask (PARTS.length: identity's own part is next). */
interface EraseCheckpoint {
  next: number;
}

export interface MemberErasureDeps {
  pool: Pool;
  clock: Clock;
  outbox: Outbox;
  jobs: { store: JobStore; wake(): void };
  client: ServiceClient;
  /** Told after the erasure request committed: every gateway forgets the member's tokens. */
  sessionEnded: (tenantId: number, sessionId: number) => void;
  /** Told after the erasure request committed: every ledger replica forgets the member. */
  memberErased: (tenantId: number, memberId: number) => void;
}

interface ErasureRow {
  tenant_id: number;
  member_id: number;
  job_id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
}

/**
 * A member's erasure. The request makes the member a tombstone at once, in one transaction with
 * its job: `erased_at` set, name, email and phone taken off the member's row (kept in
 * `member_erasures` for the job, which clears them when it ends), sessions revoked, codes deleted.
 * The job then asks each service for its part, one committed step each (commit, call, commit:
 * nothing is called while a transaction is open, and each part is idempotent, so a step repeated
 * after a crash changes nothing more), and ends with identity's own part and `member_erased`.
 */
export function memberErasure(deps: MemberErasureDeps) {
  return {
    request: (memberId: number, meta: Meta) => requestErasure(deps, memberId, meta),
    run: erasureJob(deps),
  };
}

/** The request: the tombstone, the kept data and the job in one transaction; the broadcasts after it. */
async function requestErasure(deps: MemberErasureDeps, memberId: number, meta: Meta) {
  const { pool, clock, jobs } = deps;
  const outcome = await withTransaction(pool, (db) => tombstone(deps, db, meta.tenant_id, memberId, clock.now()));
  for (const session of outcome.sessions) deps.sessionEnded(meta.tenant_id, session);
  deps.memberErased(meta.tenant_id, memberId);
  jobs.wake();
  const job = await jobs.store.find(meta.tenant_id, outcome.jobId);
  if (!job) throw new Error(`erasure job ${outcome.jobId} vanished`);
  return jobView(jobs.store, job, '/api/v1', clock.now());
}

/**
 * In the request's transaction: the member's erasure job (the one already asked for, if any) and,
 * the first time, the tombstone: personal data moved to `member_erasures`, sessions revoked (their
 * ids, for the gateways), codes deleted.
 */
async function tombstone(
  deps: Pick<MemberErasureDeps, 'jobs'>,
  db: PoolClient,
  tenantId: number,
  memberId: number,
  now: Date,
): Promise<{ jobId: string; sessions: number[] }> {
  const { rows } = await db.query<{ name: string; email: string | null; phone: string | null; erased: boolean }>(
    `SELECT name, email, phone, erased_at IS NOT NULL AS erased FROM identity.members
      WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
    [tenantId, memberId],
  );
  const member = rows[0];
  if (!member) throw new AppError('member_not_found');
  const earlier = await db.query<{ job_id: string }>(
    `SELECT job_id FROM identity.member_erasures WHERE member_id = $1 AND tenant_id = $2`,
    [memberId, tenantId],
  );
  const existing = earlier.rows[0];
  if (existing) return { jobId: existing.job_id, sessions: [] };
  // A tombstone of another kind (merged into another member) has nothing left to erase here.
  if (member.erased) throw new AppError('member_not_found');
  const jobId = await deps.jobs.store.create(db, { tenantId, kind: ERASE_JOB, params: { member_id: memberId }, now });
  await db.query(
    `INSERT INTO identity.member_erasures (tenant_id, member_id, job_id, requested_at, name, email, phone)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [tenantId, memberId, jobId, now, member.name, member.email, member.phone],
  );
  await db.query(
    `UPDATE identity.members SET erased_at = $2, name = '', email = NULL, phone = NULL,
            accepts_emails = false, is_active = false
      WHERE id = $1`,
    [memberId, now],
  );
  await db.query(`DELETE FROM identity.otps WHERE member_id = $1`, [memberId]);
  return { jobId, sessions: await revokeMemberSessions(db, memberId, now) };
}

/** The job: one service's part per step, identity's own with the end. */
function erasureJob(deps: MemberErasureDeps): JobHandler<EraseCheckpoint> {
  const erasureOf = async (tenantId: number, memberId: number): Promise<ErasureRow> => {
    const { rows } = await deps.pool.query<ErasureRow>(
      `SELECT tenant_id, member_id, job_id, name, email, phone FROM identity.member_erasures
        WHERE tenant_id = $1 AND member_id = $2`,
      [tenantId, memberId],
    );
    const row = rows[0];
    if (!row) throw new Error(`no erasure recorded for member ${memberId}`);
    return row;
  };
  return async (step) => {
    const memberId = memberIdOf(step.params);
    const erasure = await erasureOf(step.tenantId, memberId);
    const personal: PersonalData = { name: erasure.name, email: erasure.email, phone: erasure.phone };
    const next = step.checkpoint?.next ?? 0;
    const total = PARTS.length + 1;
    const part = PARTS[next];
    if (part) {
      await deps.client.call(
        part,
        { request_id: `${step.id}:${next}`, tenant_id: step.tenantId, idempotency_key: `${step.id}:${part.service}` },
        { member_id: memberId, personal },
      );
      await step.commit(undefined, { checkpoint: { next: next + 1 }, done: next + 1, total });
      return 'more';
    }
    await step.succeed((db) => eraseInIdentity(deps, db, step.tenantId, memberId, personal), { done: total, total });
    return 'finished';
  };
}

function memberIdOf(params: unknown): number {
  const id = typeof params === 'object' && params !== null && 'member_id' in params ? params.member_id : undefined;
  if (typeof id !== 'number') throw new Error('an erasure job without a member id');
  return id;
}

/**
 * identity's own part, in the job's last transaction: what is left of the member here (pending
 * mails to them, an earn digest, the details of audit rows naming them, stored exports), the
 * free text carrying their data, and the personal data the job kept; `member_erased` goes out
 * with it.
 */
async function eraseInIdentity(
  deps: Pick<MemberErasureDeps, 'outbox' | 'clock'>,
  db: PoolClient,
  tenantId: number,
  memberId: number,
  personal: PersonalData,
): Promise<void> {
  const now = deps.clock.now();
  const pattern = personalPattern(personal);
  if (personal.email)
    await db.query(`DELETE FROM identity.outgoing_mails WHERE tenant_id = $1 AND lower(to_address) = lower($2)`, [
      tenantId,
      personal.email,
    ]);
  for (const column of ['body', 'html'])
    await rewritePersonalText(
      db,
      { table: 'identity.outgoing_mails', column, where: 'tenant_id = $2', args: [tenantId] },
      pattern,
    );
  await db.query(`DELETE FROM identity.earn_mail_digests WHERE tenant_id = $1 AND member_id = $2`, [
    tenantId,
    memberId,
  ]);
  await eraseMemberDetails(db, tenantId, memberId, pattern, now);
  // The member's exports: their results and gathered pages hold everything this erasure removed.
  for (const table of ['identity.job_results', 'identity.member_export_parts'])
    await db.query(
      `DELETE FROM ${table} WHERE job_id IN (
         SELECT id FROM identity.jobs WHERE tenant_id = $1 AND kind = $3 AND params->>'member_id' = $2::text)`,
      [tenantId, memberId, EXPORT_JOB],
    );
  await erasePersonalTextInSharedTables(db, 'identity', pattern);
  await db.query(
    `UPDATE identity.member_erasures SET completed_at = $3, name = NULL, email = NULL, phone = NULL
      WHERE tenant_id = $1 AND member_id = $2`,
    [tenantId, memberId, now],
  );
  await deps.outbox.record(db, {
    type: 'member_erased',
    tenantId,
    occurredAt: now,
    data: { member_id: memberId, erased_at: now.toISOString() },
  });
}
