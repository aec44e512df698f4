import {
  identityOperations,
  ledgerOperations,
  type CardSummary,
  type MemberSummary,
  type ServiceMeta,
} from '@loyalty/contracts';
import type { ServiceClient } from '@loyalty/runtime';

/**
 * The two services referrals talks to, through the runtime's service client: typed by their
 * contracts, a failure reply rethrown as the same AppError (card_not_found, member_not_found, ...),
 * a timeout as 503.
 */
export function referralsClients(client: ServiceClient) {
  return {
    async card(meta: ServiceMeta, cardId: number): Promise<CardSummary> {
      return (await client.call(ledgerOperations.getCard, meta, { card_id: cardId })).card;
    },
    /** A member of the caller's tenant; a foreign or missing id is member_not_found. */
    async member(meta: ServiceMeta, memberId: number): Promise<MemberSummary> {
      return (await client.call(identityOperations.resolveMember, meta, { member_id: memberId })).member;
    },
    /** Masked summaries by id, in one call; unknown ids are left out. */
    async members(meta: ServiceMeta, ids: number[]): Promise<Map<number, MemberSummary>> {
      const unique = [...new Set(ids)];
      if (unique.length === 0) return new Map();
      const { members } = await client.call(identityOperations.getMembers, meta, { ids: unique });
      return new Map(members.map((m) => [m.id, m]));
    },
    /**
     * Of `ids`, the members erased: neither a member any more nor merged into one (a merged-away
     * member's credit lands on the member it was merged into).
     */
    async erased(meta: ServiceMeta, ids: number[]): Promise<Set<number>> {
      const unique = [...new Set(ids)];
      const { members, merged = [] } = await client.call(identityOperations.getMembers, meta, {
        ids: unique,
        merged: true,
      });
      const known = new Set([...members.map((m) => m.id), ...merged.map((m) => m.id)]);
      return new Set(unique.filter((id) => !known.has(id)));
    },
    /** Credit bonus points under a deterministic key: a repeat replays the first credit. */
    creditBonus(
      meta: ServiceMeta,
      key: string,
      credit: { cardId: number; memberId: number; points: number; referralId: number; party: string },
    ) {
      return client.call(
        ledgerOperations.creditPoints,
        { request_id: meta.request_id, tenant_id: meta.tenant_id, idempotency_key: key },
        {
          card_id: credit.cardId,
          member_id: credit.memberId,
          points: credit.points,
          event: 'referral_bonus',
          reference: key,
          metadata: { referral_id: credit.referralId, party: credit.party },
        },
      );
    },
  };
}
export type ReferralsClients = ReturnType<typeof referralsClients>;
