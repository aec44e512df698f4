import { AppError, identityOperations, type MemberSummary, type Subjects } from '@loyalty/contracts';
import { invoke, type NatsConnection } from '@loyalty/runtime';

/** Who is asking: the tenant decides which members identity can see. */
export type CallerMeta = { request_id: string; tenant_id: number } & Record<string, unknown>;

/**
 * The ledger's view of identity (members are identity's). A failure reply comes back as the same
 * AppError (member_not_found, validation_error); a timeout as service_unavailable.
 */
export function identityClient(nc: NatsConnection, subjects: Subjects, timeoutMs: number) {
  const op = identityOperations.resolveMember;
  async function resolve(meta: CallerMeta, by: { member_id?: number; email?: string; phone?: string }, create?: { name?: string }) {
    const data = { ...by, create_if_missing: create !== undefined, ...(create?.name !== undefined ? { name: create.name } : {}) };
    return invoke<{ member: MemberSummary; created: boolean }>(nc, subjects.op(op.service, op.operation), meta, data, timeoutMs);
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
