import {
  identityOperations,
  ledgerOperations,
  type CardSummary,
  type MemberSummary,
  type RewardSummary,
  type ServiceMeta,
} from '@loyalty/contracts';
import type { ServiceClient } from '@loyalty/runtime';
import type { z } from 'zod';

/**
 * The other services' operations claims calls, through the runtime's service client: typed by
 * their contracts, a failure reply thrown as the same AppError, a timeout as 503.
 */
export function claimsClients(client: ServiceClient) {
  const i = identityOperations;
  const l = ledgerOperations;
  return {
    issueClaimOtp: (meta: ServiceMeta, d: z.input<typeof i.issueClaimOtp.request>) =>
      client.call(i.issueClaimOtp, meta, d),
    /** Consumes the code; under the caller's idempotency key a repeat answers as the first did. */
    verifyClaimOtp: (meta: ServiceMeta, d: z.input<typeof i.verifyClaimOtp.request>) =>
      client.call(i.verifyClaimOtp, meta, d),
    async members(meta: ServiceMeta, ids: number[]): Promise<Map<number, MemberSummary>> {
      if (ids.length === 0) return new Map();
      const r = await client.call(i.getMembers, meta, { ids: [...new Set(ids)] });
      return new Map(r.members.map((m) => [m.id, m]));
    },
    card: async (meta: ServiceMeta, cardId: number): Promise<CardSummary> =>
      (await client.call(l.getCard, meta, { card_id: cardId })).card,
    reward: async (meta: ServiceMeta, cardId: number, rewardId: number): Promise<RewardSummary> =>
      (await client.call(l.getReward, meta, { card_id: cardId, reward_id: rewardId })).reward,
    /** Reserve the reward's points under the claim's key (the same key answers the same hold). */
    holdPoints: (meta: ServiceMeta, key: string, d: z.input<typeof l.holdPoints.request>) =>
      client.call(l.holdPoints, { request_id: meta.request_id, tenant_id: meta.tenant_id, idempotency_key: key }, d),
    /** Give a claim's held points back; a hold already captured or released is left as it is. */
    releaseHold: (meta: ServiceMeta, key: string, d: z.input<typeof l.releaseHold.request>) =>
      client.call(l.releaseHold, { request_id: meta.request_id, tenant_id: meta.tenant_id, idempotency_key: key }, d),
    /** Spendable points of members on cards (accounts the ledger cannot read are left out). */
    pointsBalances: async (meta: ServiceMeta, accounts: { card_id: number; member_id: number }[]) =>
      accounts.length === 0
        ? []
        : (
            await client.call(
              l.pointsBalances,
              { request_id: meta.request_id, tenant_id: meta.tenant_id },
              {
                accounts,
              },
            )
          ).balances,
    /** Debit under a deterministic idempotency key (capturing the claim's hold): a repeated call replays the first result. */
    debitPoints: (meta: ServiceMeta, key: string, d: z.input<typeof l.debitPoints.request>) =>
      client.call(l.debitPoints, { request_id: meta.request_id, tenant_id: meta.tenant_id, idempotency_key: key }, d),
  };
}
export type ClaimsClients = ReturnType<typeof claimsClients>;
