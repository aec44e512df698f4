import { LRUCache } from 'lru-cache';
import { AppError, identityOperations, type MemberSummary, type Subjects } from '@loyalty/contracts';
import { invoke, type NatsConnection } from '@loyalty/runtime';

/** Who is asking: the tenant decides which members identity can see. */
export type CallerMeta = { request_id: string; tenant_id: number } & Record<string, unknown>;

/**
 * The ledger's view of identity (members are identity's). A failure reply comes back as the same
 * AppError (member_not_found, validation_error); a timeout as service_unavailable.
 *
 * A member found by id is remembered for `cacheTtlMs`: an earn or a read by member_id then needs
 * no message to identity. Members cannot be changed or removed through any operation (identity
 * only creates them), so a remembered summary is the stored one; if a member update is ever
 * added, identity must broadcast it as it does for app credentials.
 */
export function identityClient(
  nc: NatsConnection,
  subjects: Subjects,
  timeoutMs: number,
  cacheTtlMs = 0,
  cacheMax = 50_000,
) {
  const op = identityOperations.resolveMember;
  const known = cacheTtlMs > 0 ? new LRUCache<string, MemberSummary>({ max: cacheMax, ttl: cacheTtlMs }) : undefined;

  async function resolve(
    meta: CallerMeta,
    by: { member_id?: number; email?: string; phone?: string },
    create?: { name?: string },
  ) {
    const cacheKey = by.member_id !== undefined ? `${meta.tenant_id}:${by.member_id}` : undefined;
    const hit = cacheKey === undefined ? undefined : known?.get(cacheKey);
    if (hit) return { member: hit, created: false };
    const data = {
      ...by,
      create_if_missing: create !== undefined,
      ...(create?.name !== undefined ? { name: create.name } : {}),
    };
    const found = await invoke<{ member: MemberSummary; created: boolean }>(
      nc,
      subjects.op(op.service, op.operation),
      meta,
      data,
      timeoutMs,
    );
    if (found.member) known?.set(`${meta.tenant_id}:${found.member.id}`, found.member);
    return found;
  }
  return {
    /** Find the member (member_id wins over email and phone) or create it when `create` is given. */
    resolve,
    /** Throws member_not_found unless the member exists in the caller's tenant. */
    async mustExist(meta: CallerMeta, memberId: number): Promise<MemberSummary> {
      const { member } = await resolve(meta, { member_id: memberId });
      if (!member) throw new AppError('member_not_found');
      return member;
    },
  };
}
export type IdentityClient = ReturnType<typeof identityClient>;
