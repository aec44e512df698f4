import { AppError, memberDataInternalOperations, type Meta } from '@loyalty/contracts';
import {
  jobView,
  withTransaction,
  type Clock,
  type JobHandler,
  type JobStore,
  type PoolClient,
  type Pool,
  type Queryable,
  type ServiceClient,
} from '@loyalty/runtime';
import { memberRows } from '../store/audit.ts';
import { consentsOf } from '../store/consents.ts';
import { findMemberBy, liveMember } from '../store/members.ts';

export const EXPORT_JOB = 'member.export';

/** The services asked for their part of an export, in this order; identity's own part comes last. */
const PARTS = [
  memberDataInternalOperations.ledgerExport,
  memberDataInternalOperations.claimsExport,
  memberDataInternalOperations.referralsExport,
  memberDataInternalOperations.webhooksExport,
] as const;

/** Where an export job is: the service asked (PARTS index), the page it asks next, the pages kept. */
interface ExportCheckpoint {
  part: number;
  cursor: string | null;
  pages: number;
}

export interface MemberExportDeps {
  pool: Pool;
  clock: Clock;
  jobs: { store: JobStore; wake(): void };
  client: ServiceClient;
}

/** The format of the document, named in it. */
export const EXPORT_FORMAT = 'loyalty-member-export/1';

/**
 * A member's data export: a job of identity that asks every service for its part, a page at a
 * time, each page kept (`member_export_parts`) in one transaction with the job's checkpoint
 * (commit, call, commit: no call while a transaction is open; a page asked again after a crash
 * is the same read). Its end adds identity's own part and stores one JSON document as the job's
 * result, downloadable for 7 days.
 */
export function memberExport(deps: MemberExportDeps) {
  return {
    async request(memberId: number, meta: Meta) {
      const { pool, clock, jobs } = deps;
      const jobId = await withTransaction(pool, async (db) => {
        if (!(await findMemberBy(db, meta.tenant_id, { id: memberId }, true))) throw new AppError('member_not_found');
        return jobs.store.create(db, {
          tenantId: meta.tenant_id,
          kind: EXPORT_JOB,
          params: { member_id: memberId },
          now: clock.now(),
        });
      });
      jobs.wake();
      const job = await jobs.store.find(meta.tenant_id, jobId);
      if (!job) throw new Error(`export job ${jobId} vanished`);
      return jobView(jobs.store, job, '/api/v1', clock.now());
    },
    run: exportJob(deps),
  };
}

function exportJob(deps: MemberExportDeps): JobHandler<ExportCheckpoint> {
  const total = PARTS.length + 1;
  return async (step) => {
    const memberId = memberIdOf(step.params);
    const rowId = deps.jobs.store.rowId(step.id);
    if (!rowId) throw new Error(`not an identity job: ${step.id}`);
    const at = step.checkpoint ?? { part: 0, cursor: null, pages: 0 };
    const part = PARTS[at.part];
    if (part) {
      const page = await deps.client.call(
        part,
        { request_id: `${step.id}:${at.pages}`, tenant_id: step.tenantId },
        { member_id: memberId, cursor: at.cursor },
      );
      const next: ExportCheckpoint =
        page.next_cursor === null
          ? { part: at.part + 1, cursor: null, pages: at.pages + 1 }
          : { part: at.part, cursor: page.next_cursor, pages: at.pages + 1 };
      await step.commit(
        async (db) => {
          if (page.section === '') return;
          await db.query(
            `INSERT INTO identity.member_export_parts (job_id, seq, service, section, rows) VALUES ($1, $2, $3, $4, $5)`,
            [rowId, at.pages, part.service, page.section, JSON.stringify(page.rows)],
          );
        },
        { checkpoint: next, done: next.part, total },
      );
      return 'more';
    }
    const document = await assemble(deps.pool, rowId, step.tenantId, memberId, deps.clock.now());
    const dropParts = async (db: PoolClient) => {
      await db.query(`DELETE FROM identity.member_export_parts WHERE job_id = $1`, [rowId]);
    };
    if (!document) {
      // Erased (or merged away) while the export ran: nothing of them is handed out.
      await step.commit(dropParts, { checkpoint: at, done: step.done, total });
      await step.fail([{ code: 'member_not_found', message: 'The member was erased while the export ran.' }]);
      return 'finished';
    }
    const data = Buffer.from(JSON.stringify(document, null, 2));
    await step.succeed(dropParts, { done: total, total, result: { contentType: 'application/json', data } });
    return 'finished';
  };
}

function memberIdOf(params: unknown): number {
  const id = typeof params === 'object' && params !== null && 'member_id' in params ? params.member_id : undefined;
  if (typeof id !== 'number') throw new Error('an export job without a member id');
  return id;
}

const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The document: identity's part read now, every other service's from the pages kept, section by
 * section in the order they came. Undefined when the member is no longer there.
 */
async function assemble(
  db: Queryable,
  jobRowId: string,
  tenantId: number,
  memberId: number,
  now: Date,
): Promise<Record<string, unknown> | undefined> {
  const identity = await identityPart(db, tenantId, memberId);
  if (!identity) return undefined;
  const services: Record<string, Record<string, unknown[]>> = {};
  const { rows } = await db.query<{ service: string; section: string; rows: unknown[] }>(
    `SELECT service, section, rows FROM identity.member_export_parts WHERE job_id = $1 ORDER BY seq`,
    [jobRowId],
  );
  for (const page of rows) {
    const service = (services[page.service] ??= {});
    (service[page.section] ??= []).push(...page.rows);
  }
  return {
    format: EXPORT_FORMAT,
    exported_at: now.toISOString(),
    tenant_id: tenantId,
    member_id: memberId,
    identity,
    ...services,
  };
}

/** What identity holds about the member: the profile, consents, sessions and codes (metadata only), audit rows naming them. */
async function identityPart(db: Queryable, tenantId: number, memberId: number) {
  const profile = await db.query(
    `SELECT id, name, email, phone, accepts_emails, is_active, ${iso('created_at')} AS created_at
       FROM identity.members WHERE tenant_id = $1 AND id = $2 AND ${liveMember()}`,
    [tenantId, memberId],
  );
  if (profile.rows.length === 0) return undefined;
  const sessions = await db.query(
    `SELECT id, ${iso('created_at')} AS created_at, ${iso('expires_at')} AS expires_at, ${iso('revoked_at')} AS revoked_at
       FROM identity.member_sessions WHERE tenant_id = $1 AND member_id = $2 ORDER BY id`,
    [tenantId, memberId],
  );
  const codes = await db.query(
    `SELECT purpose, ${iso('created_at')} AS created_at, ${iso('expires_at')} AS expires_at,
            ${iso('consumed_at')} AS consumed_at, attempts
       FROM identity.otps WHERE tenant_id = $1 AND member_id = $2 ORDER BY id`,
    [tenantId, memberId],
  );
  const audit = await memberRows(db, tenantId, memberId);
  return {
    profile: profile.rows[0],
    consents: (await consentsOf(db, tenantId, memberId)) ?? [],
    sessions: sessions.rows,
    one_time_codes: codes.rows,
    audit_entries: audit.map((r) => ({
      seq: Number(r.seq),
      occurred_at: r.occurred_at,
      // Which staff user did it is another person's data (as who decided a claim): their role only.
      actor: actorView(r.actor),
      action: r.action,
      target: r.target,
      amounts: r.amounts,
      details: r.details ?? {},
      service: r.service,
      request_id: r.request_id,
    })),
  };
}

/** An audit entry's actor in a member's export: a staff user by role only (who they are is theirs). */
function actorView(actor: unknown): unknown {
  if (typeof actor !== 'object' || actor === null || !('type' in actor) || actor.type !== 'staff') return actor;
  return { type: 'staff', role: 'role' in actor ? actor.role : null };
}
