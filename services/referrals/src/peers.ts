import {
  identityOperations,
  ledgerOperations,
  type CardSummary,
  type Meta,
  type MemberSummary,
  type Subjects,
} from '@loyalty/contracts';
import { invoke, type NatsConnection } from '@loyalty/runtime';
import type { z } from 'zod';

/** Caller identity passed on to identity and the ledger (the tenant decides what they see). */
export type CallMeta = Pick<Meta, 'request_id' | 'tenant_id'> & Partial<Meta>;

type Reply<K extends { reply: z.ZodType }> = z.infer<K['reply']>;

/**
 * The two services referrals talks to, over NATS request/reply. A failure reply is rethrown as
 * the same AppError (card_not_found, member_not_found, ...); a timeout is service_unavailable.
 */
export function peers(nc: NatsConnection, subjects: Subjects, timeoutMs: number) {
  const call = <T>(service: 'identity' | 'ledger', operation: string, meta: CallMeta, data: unknown) =>
    invoke<T>(nc, subjects.op(service, operation), meta as CallMeta & Record<string, unknown>, data, timeoutMs);
  return {
    async card(meta: CallMeta, cardId: number): Promise<CardSummary> {
      return (
        await call<Reply<typeof ledgerOperations.getCard>>('ledger', ledgerOperations.getCard.operation, meta, {
          card_id: cardId,
        })
      ).card;
    },
    /** A member of the caller's tenant; a foreign or missing id is member_not_found. */
    async member(meta: CallMeta, memberId: number): Promise<MemberSummary> {
      return (
        await call<Reply<typeof identityOperations.resolveMember>>(
          'identity',
          identityOperations.resolveMember.operation,
          meta,
          { member_id: memberId },
        )
      ).member;
    },
    /** Masked summaries by id, in one call; unknown ids are left out. */
    async members(meta: CallMeta, ids: number[]): Promise<Map<number, MemberSummary>> {
      const unique = [...new Set(ids)];
      if (unique.length === 0) return new Map();
      const { members } = await call<Reply<typeof identityOperations.getMembers>>(
        'identity',
        identityOperations.getMembers.operation,
        meta,
        { ids: unique },
      );
      return new Map(members.map((m) => [m.id, m]));
    },
    /** Credit bonus points under a deterministic key: a repeat replays the first credit. */
    async creditBonus(
      meta: CallMeta,
      key: string,
      credit: { cardId: number; memberId: number; points: number; referralId: number; party: string },
    ) {
      return call<Reply<typeof ledgerOperations.creditPoints>>(
        'ledger',
        ledgerOperations.creditPoints.operation,
        { ...meta, idempotency_key: key },
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
export type Peers = ReturnType<typeof peers>;
