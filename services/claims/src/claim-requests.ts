import {
  AppError,
  type AuditActor,
  type ClaimStatus as PublicClaimStatus,
  type Meta,
  type ServiceMeta,
} from '@loyalty/contracts';
import { recordDecisionAudit } from './audit.ts';
import { WithMessage, withTransaction, type Clock, type Outbox, type Pool, type ReplayStore } from '@loyalty/runtime';
import { decide, expiryOf, pagination, publicStatus, type ClaimStatus } from './domain/claim-request.ts';
import { claimRecord } from './domain/record.ts';
import { recordClaimEvent } from './events.ts';
import type { ClaimsClients } from './clients.ts';
import type { ClaimHolds } from './claim-holds.ts';
import {
  deleteHolding,
  findClaimRequest,
  insertClaimRequest,
  listClaimRequests,
  markPending,
  markRejected,
  type ClaimRequest,
} from './store/claim-requests.ts';

export interface ClaimDeps {
  pool: Pool;
  clock: Clock;
  clients: ClaimsClients;
  outbox: Outbox;
  replays: ReplayStore;
  /** Record the expiry of the tenant's request if its lifetime is over (see sweeper.ts). */
  expireIfDue: (tenantId: number, id: number) => Promise<void>;
  holds: ClaimHolds;
}

export function notPending(status: ClaimStatus): AppError {
  const message =
    status === 'approving'
      ? 'An approval of this claim request is in progress.'
      : `The claim request is ${status}, not pending.`;
  return new AppError('claim_request_not_pending', message, { current_status: publicStatus(status) });
}

/** The card must be a points card of this tenant. */
async function pointsCard(deps: ClaimDeps, meta: Meta, cardId: number) {
  const card = await deps.clients.card(meta, cardId);
  if (card.reward_system !== 'points')
    throw new AppError('wrong_card_type', 'Claims are made on points cards; this is a cashback card.');
  return card;
}

/** The reward must belong to the card and be active. */
async function activeReward(deps: ClaimDeps, meta: Meta, cardId: number, rewardId: number) {
  const reward = await deps.clients.reward(meta, cardId, rewardId);
  if (!reward.active) throw new AppError('reward_inactive');
  return reward;
}

export function claimRequests(deps: ClaimDeps) {
  const { pool, clients } = deps;
  return {
    async requestOtp(d: { member_email: string; card_id: number; reward_id?: number }, meta: Meta) {
      await pointsCard(deps, meta, d.card_id);
      if (d.reward_id !== undefined) await activeReward(deps, meta, d.card_id, d.reward_id);
      // The code remembers what it was issued for; create refuses it for another card or reward.
      const context = { card_id: d.card_id, ...(d.reward_id !== undefined ? { reward_id: d.reward_id } : {}) };
      const issued = await clients.issueClaimOtp(meta, { member_email: d.member_email, context });
      return new WithMessage(
        {
          expires_at: issued.expires_at,
          expires_in_minutes: issued.expires_in_minutes,
          ...(issued.otp_code !== undefined ? { otp_code: issued.otp_code } : {}),
        },
        "A verification code was sent to the member's email.",
      );
    },

    create: (d: NewClaim, meta: Meta) => createClaim(deps, d, meta),

    async list(d: { card_id: number; status?: PublicClaimStatus; limit: number; offset: number }, meta: Meta) {
      await clients.card(meta, d.card_id); // a missing or foreign card is card_not_found, not an empty list
      const { rows, total } = await listClaimRequests(pool, {
        tenantId: meta.tenant_id,
        cardId: d.card_id,
        status: d.status,
        limit: d.limit,
        offset: d.offset,
      });
      const members = await clients.members(
        meta,
        rows.map((r) => r.member_id),
      );
      return {
        card_id: d.card_id,
        claim_requests: rows.map((r) => claimRecord(r, members.get(r.member_id))),
        pagination: pagination(d.limit, d.offset, total),
      };
    },

    async get(d: { request_id: number }, meta: Meta) {
      const claim = await findClaimRequest(pool, meta.tenant_id, d.request_id);
      if (!claim) throw new AppError('claim_request_not_found');
      const members = await clients.members(meta, [claim.member_id]);
      return { claim_request: claimRecord(claim, members.get(claim.member_id)) };
    },

    reject: (d: { request_id: number; staff_note?: string }, meta: ServiceMeta, actor: AuditActor) =>
      rejectClaim(deps, d, meta, actor),
  };
}

interface NewClaim {
  member_email: string;
  card_id: number;
  reward_id: number;
  verification_code: string;
  member_note?: string;
}

async function createClaim(deps: ClaimDeps, d: NewClaim, meta: Meta): Promise<CreatedReply> {
  const key = meta.idempotency_key
    ? { tenantId: meta.tenant_id, key: meta.idempotency_key, operation: 'claims.create', data: d }
    : undefined;
  // The key is held while the steps run: a retry during the first attempt is answered 409
  // idempotency_in_progress (and retried by clients) instead of placing a second hold.
  return deps.replays.steps(key, async () => {
    // Calls first, outside any transaction: the card and reward are checked before the code is
    // consumed, so a wrong card or reward does not burn it. Under the client's key the
    // verification is replayed by identity, so a creation interrupted after it can be retried.
    const card = await pointsCard(deps, meta, d.card_id);
    const reward = await activeReward(deps, meta, d.card_id, d.reward_id);
    const verified = await deps.clients.verifyClaimOtp(meta, {
      member_email: d.member_email,
      code: d.verification_code,
    });
    checkIssuedFor(verified.context, d);
    // Then the request, invisible (`holding`) until the ledger has reserved its points under
    // the claim's key: commit, call, commit. Not enough spendable points: no request at all.
    const now = deps.clock.now();
    const holding = await withTransaction(deps.pool, (db) =>
      insertClaimRequest(db, {
        tenantId: meta.tenant_id,
        cardId: d.card_id,
        memberId: verified.member_id,
        rewardId: reward.id,
        rewardName: reward.name,
        pointsCost: reward.points_cost,
        memberNote: d.member_note ?? null,
        createdAt: now,
        expiresAt: expiryOf(now, card.claim_lifetime_hours),
      }),
    );
    const hold = await placeHold(deps, holding, meta);
    // Then the request becomes pending with its event and the key's answer.
    return withTransaction(deps.pool, async (db): Promise<CreatedReply> => {
      const claim = await markPending(db, holding.id, hold);
      // The sweeper gave up on it meanwhile (and released its hold): the creation failed.
      if (!claim) throw new AppError('service_unavailable', 'The claim request could not be completed; try again.');
      await recordClaimEvent(db, deps.outbox, 'claim_requested', claim, claim.created_at);
      const reply: CreatedReply = {
        claim_request: { id: claim.id, status: 'pending', created_at: claim.created_at.toISOString() },
      };
      if (key) await deps.replays.save(db, key, reply);
      return reply;
    });
  });
}

/** A code remembers the card (and reward) it was issued for: it verifies no other claim. */
function checkIssuedFor(ctx: Record<string, unknown>, d: { card_id: number; reward_id: number }): void {
  if (
    (ctx.card_id !== undefined && Number(ctx.card_id) !== d.card_id) ||
    (ctx.reward_id !== undefined && Number(ctx.reward_id) !== d.reward_id)
  ) {
    throw new AppError('invalid_verification_code', 'The verification code was issued for another card or reward.', {
      reason: 'issued_for_other_claim',
    });
  }
}

/** The ledger's hold of the request's points; a refusal certainly placed nothing, so the request goes. */
async function placeHold(deps: ClaimDeps, holding: ClaimRequest, meta: Meta): Promise<'held' | 'none'> {
  try {
    return await deps.holds.place(holding, meta.request_id);
  } catch (err) {
    // Anything but a refusal (no answer) is left to the sweeper.
    if (err instanceof AppError && err.code === 'insufficient_points') await deleteHolding(deps.pool, holding.id);
    throw err;
  }
}

async function rejectClaim(
  deps: ClaimDeps,
  d: { request_id: number; staff_note?: string },
  meta: ServiceMeta,
  actor: AuditActor,
) {
  await deps.expireIfDue(meta.tenant_id, d.request_id);
  let rejected: ClaimRequest | undefined;
  const reply = await deps.replays.run(
    { tenantId: meta.tenant_id, key: meta.idempotency_key, operation: 'claims.reject', data: d },
    async (db) => {
      // The row lock serializes reject with approve's first step: exactly one of them wins.
      const claim = await findClaimRequest(db, meta.tenant_id, d.request_id, true);
      if (!claim) throw new AppError('claim_request_not_found');
      const now = deps.clock.now();
      const decision = decide(claim, 'reject', now);
      if (!decision.ok) throw notPending(decision.currentStatus);
      const done = await markRejected(db, claim.id, now, d.staff_note, actor);
      await recordClaimEvent(db, deps.outbox, 'claim_rejected', done, now);
      await recordDecisionAudit(deps.outbox, db, done, 'claim.rejected', meta.request_id, now);
      rejected = done;
      return {
        claim_request: { id: done.id, status: 'rejected' as const, rejected_at: done.rejected_at.toISOString() },
      };
    },
  );
  // The member keeps the points: the hold goes back once the rejection is committed.
  if (rejected) await deps.holds.releaseDecided(rejected, meta.request_id);
  return reply;
}

interface CreatedReply {
  claim_request: { id: number; status: 'pending'; created_at: string };
}
