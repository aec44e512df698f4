import { AppError } from '@loyalty/contracts';
import {
  sqlExportPage,
  Exports,
  type ExportColumn,
  type ExportSource,
  type Pool,
  type ServiceRuntime,
} from '@loyalty/runtime';
import { z } from 'zod';
import { findTenant } from '../store/tenants.ts';

/**
 * The members export: a tenant's members (not the erased or merged-away tombstones) by id, with
 * the columns of a members import (`external_id`, `name`, `email`, `phone`, `accepts_emails`,
 * `joined_at`) after their `id`; `accepts_emails` is the marketing mail consent as it stands.
 * `from`/`to` select by when they joined. Members are not per card: `card_id` does not apply.
 */
const columns: ExportColumn[] = [
  { name: 'id', sql: 'm.id', type: 'number' },
  { name: 'external_id', sql: 'm.external_id', type: 'text' },
  { name: 'name', sql: 'm.name', type: 'text' },
  { name: 'email', sql: 'm.email', type: 'text' },
  { name: 'phone', sql: 'm.phone', type: 'text' },
  { name: 'accepts_emails', sql: 'coalesce(c.granted, m.accepts_emails)', type: 'boolean' },
  { name: 'joined_at', sql: 'm.created_at', type: 'time' },
];

const State = z.object({ after: z.array(z.string()) });

function membersSource(pool: Pool): ExportSource {
  return {
    columns: columns.map((c) => c.name),
    async check(req) {
      if (req.cardId !== null)
        throw new AppError('validation_error', 'Invalid request: card_id.', {
          fields: [{ field: 'card_id', message: 'members are not per card: card_id does not apply' }],
        });
    },
    async page(req, state, limits) {
      const at = state === undefined ? undefined : State.parse(state);
      const page = await sqlExportPage(pool, {
        columns,
        format: req.format,
        from: `identity.members m
               LEFT JOIN identity.member_consents c ON c.member_id = m.id AND c.purpose = 'marketing_email'`,
        where: `m.tenant_id = $1 AND m.erased_at IS NULL AND m.merged_into IS NULL
                AND m.created_at >= $2 AND m.created_at < $3`,
        params: [req.tenantId, req.from ?? '-infinity', req.to],
        keys: [{ sql: 'm.id', type: 'bigint' }],
        after: at?.after ?? null,
        ...limits,
      });
      return {
        text: page.text,
        rows: page.rows,
        state: page.more ? { after: page.last } : null,
        done: !page.more,
      };
    },
  };
}

/** Identity's exports (members) and the jobs that store them as files. */
export function identityExports(rt: ServiceRuntime): Exports {
  return new Exports({
    pool: rt.pool,
    service: 'identity',
    jobs: rt.jobs,
    clock: rt.clock,
    sources: { members: membersSource(rt.pool) },
    // The operator's export names the tenant: one that does not exist is not an empty file.
    async tenantMustExist(tenantId) {
      if (!(await findTenant(rt.pool, tenantId))) throw new AppError('tenant_not_found');
    },
  });
}
