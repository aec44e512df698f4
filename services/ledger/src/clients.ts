import { LRUCache } from 'lru-cache';
import { AppError, identityOperations, MembersChanged, type MemberSummary, type ServiceMeta } from '@loyalty/contracts';
import { BroadcastListener, type NatsConnection, type ServiceClient } from '@loyalty/runtime';

/**
 * The ledger's view of identity's members, through the service client (a failure reply comes
 * back as the same AppError: member_not_found, validation_error; a timeout as 503).
 *
 * A member found by id is remembered for `cacheTtlMs`: an earn or a read by member_id then needs
 * no message to identity. A member is not changed once created, but it may be erased (a
 * tombstone, not found any more): identity broadcasts that (`members-changed`) and every replica
 * forgets the member at once (`forget`); the TTL bounds a missed broadcast.
 */
export function memberDirectory(client: ServiceClient, cacheTtlMs = 0, cacheMax = 50_000) {
  const known = cacheTtlMs > 0 ? new LRUCache<string, MemberSummary>({ max: cacheMax, ttl: cacheTtlMs }) : undefined;

  async function resolve(
    meta: ServiceMeta,
    by: { member_id?: number; email?: string; phone?: string },
    create?: { name?: string },
  ): Promise<{ member: MemberSummary; created: boolean }> {
    const hit = by.member_id === undefined ? undefined : known?.get(`${meta.tenant_id}:${by.member_id}`);
    if (hit) return { member: hit, created: false };
    const found = await client.call(identityOperations.resolveMember, meta, {
      ...by,
      create_if_missing: create !== undefined,
      ...(create?.name !== undefined ? { name: create.name } : {}),
    });
    known?.set(`${meta.tenant_id}:${found.member.id}`, found.member);
    return found;
  }
  return {
    /** Find the member (member_id wins over email and phone) or create it when `create` is given. */
    resolve,
    /** Forget a remembered member (identity's `members-changed` broadcast: it was erased). */
    forget(tenantId: number, memberId: number): void {
      known?.delete(`${tenantId}:${memberId}`);
    },
    /** Throws member_not_found unless the member exists in the caller's tenant. */
    async mustExist(meta: ServiceMeta, memberId: number): Promise<MemberSummary> {
      const { member } = await resolve(meta, { member_id: memberId });
      if (!member) throw new AppError('member_not_found');
      return member;
    },
  };
}
export type MemberDirectory = ReturnType<typeof memberDirectory>;

/** One-time codes of identity by member id (a transfer's sender proves it is them). */
export function memberCodes(client: ServiceClient) {
  return {
    issue: (meta: ServiceMeta, d: { member_id: number; purpose: 'transfer'; context: Record<string, unknown> }) =>
      client.call(identityOperations.issueMemberOtp, meta, d),
    verify: (meta: ServiceMeta, d: { member_id: number; purpose: 'transfer'; code: string }) =>
      client.call(identityOperations.verifyMemberOtp, meta, d),
  };
}
export type MemberCodes = ReturnType<typeof memberCodes>;

/** A member erased is forgotten by every replica at once: identity's `members-changed` broadcast. */
export function forgetErasedMembers(nc: NatsConnection, subject: string, members: MemberDirectory): BroadcastListener {
  return new BroadcastListener(nc, subject, (message) => {
    const change = MembersChanged.safeParse(message);
    if (change.success) members.forget(change.data.tenant_id, change.data.member_id);
  });
}
