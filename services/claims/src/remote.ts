import {
  identityOperations,
  ledgerOperations,
  type CardSummary,
  type Meta,
  type MemberSummary,
  type RewardSummary,
} from '@loyalty/contracts';
import { invoke, type NatsConnection } from '@loyalty/runtime';
import type { Subjects } from '@loyalty/contracts';
import type { z } from 'zod';

type Op = { service: 'identity' | 'ledger'; operation: string };
type Reply<O extends { reply: z.ZodType }> = z.infer<O['reply']>;

/**
 * The other services' operations this service calls, over NATS request/reply. A failure reply
 * arrives as the same AppError (code and details), a timeout as `service_unavailable`.
 */
export function remoteServices(nc: NatsConnection, subjects: Subjects, timeoutMs: number) {
  const call = <T>(op: Op, meta: Meta, data: unknown) =>
    invoke<T>(nc, subjects.op(op.service, op.operation), meta, data, timeoutMs);
  const i = identityOperations;
  const l = ledgerOperations;
  return {
    issueClaimOtp: (meta: Meta, d: { member_email: string; context: Record<string, unknown> }) =>
      call<Reply<typeof i.issueClaimOtp>>(i.issueClaimOtp, meta, d),
    verifyClaimOtp: (meta: Meta, d: { member_email: string; code: string }) =>
      call<Reply<typeof i.verifyClaimOtp>>(i.verifyClaimOtp, meta, d),
    async members(meta: Meta, ids: number[]): Promise<Map<number, MemberSummary>> {
      if (ids.length === 0) return new Map();
      const r = await call<Reply<typeof i.getMembers>>(i.getMembers, meta, { ids: [...new Set(ids)] });
      return new Map(r.members.map((m) => [m.id, m]));
    },
    card: async (meta: Meta, cardId: number): Promise<CardSummary> =>
      (await call<Reply<typeof l.getCard>>(l.getCard, meta, { card_id: cardId })).card,
    reward: async (meta: Meta, cardId: number, rewardId: number): Promise<RewardSummary> =>
      (await call<Reply<typeof l.getReward>>(l.getReward, meta, { card_id: cardId, reward_id: rewardId })).reward,
    /** Debit under a deterministic idempotency key: a repeated call replays the first result. */
    debitPoints: (meta: Meta, key: string, d: z.input<typeof l.debitPoints.request>) =>
      call<Reply<typeof l.debitPoints>>(l.debitPoints, { ...meta, idempotency_key: key }, d),
  };
}
export type RemoteServices = ReturnType<typeof remoteServices>;
