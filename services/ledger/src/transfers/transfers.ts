import { AppError, TransferRecord, type OperationOutput, type transferOperations } from '@loyalty/contracts';
import { isUniqueViolation, WithMessage, type PoolClient } from '@loyalty/runtime';
import type { Accounting, LedgerDeps, LedgerMeta } from '../accounting.ts';
import { cardOfKind } from '../card-catalogue.ts';
import type { RuledCard } from '../card-cache.ts';
import type { MemberCodes } from '../clients.ts';
import { MAX_BALANCE } from '../domain/money.ts';
import { appendJournal, findBalance, type AccountKey } from '../store/accounts.ts';
import {
  addToBalance,
  findTransfer,
  insertTransfer,
  moveSpendableLots,
  nextTransferId,
  sentThisMonth,
  type MovedLot,
  type TransferRow,
} from './store.ts';

type TransferAnswer = OperationOutput<(typeof transferOperations)['points.transfer']>;

interface TransferRequest {
  card_id: number;
  from_member_id: number;
  to_member_id: number;
  points: number;
  reference: string;
  verification_code?: string;
}

const insufficient = (balance: number, required: number) =>
  new AppError('insufficient_points', undefined, { points_balance: balance, points_required: required });

/** A transfer already made under the reference: the same one answers it again, another is a 409. */
function replayed(prior: TransferRow, d: TransferRequest): TransferAnswer {
  if (prior.from_member_id !== d.from_member_id || prior.to_member_id !== d.to_member_id || prior.points !== d.points)
    throw new AppError('duplicate_reference', 'This reference was already used for another transfer on this card.', {
      original_transfer_id: prior.id,
    });
  return TransferRecord.parse(prior.answer);
}

/**
 * Points transfers between two members of the tenant on a points card. Both accounts are locked
 * (lower member id first, so two opposite transfers cannot deadlock) and settled; the sender's
 * spendable lots go soonest-expiring first and the receiver gets lots with the same dates, so a
 * redemption racing a transfer waits for the sender's row and never spends what left. Identity is
 * asked (members exist, the code is right) before the transaction, never inside it.
 */
export class Transfers {
  constructor(
    private readonly deps: LedgerDeps,
    private readonly books: Accounting,
    private readonly codes: MemberCodes,
  ) {}

  /** POST /loyalty/points/transfer/request-otp: a code of purpose `transfer` mailed to the sender. */
  async requestOtp(d: { card_id: number; from_member_id: number }, meta: LedgerMeta) {
    const card = await this.transferCard(meta, d.card_id);
    const issued = await this.codes.issue(meta, {
      member_id: d.from_member_id,
      purpose: 'transfer',
      context: { card_id: card.id },
    });
    return new WithMessage(
      {
        expires_at: issued.expires_at,
        expires_in_minutes: issued.expires_in_minutes,
        ...(issued.otp_code !== undefined ? { otp_code: issued.otp_code } : {}),
      },
      "A verification code was sent to the sending member's email.",
    );
  }

  /** POST /loyalty/points/transfer. */
  async transfer(d: TransferRequest, meta: LedgerMeta): Promise<TransferAnswer> {
    const card = await this.transferCard(meta, d.card_id);
    if (meta.member_id !== undefined && meta.member_id !== d.from_member_id)
      throw new AppError('member_token_mismatch', 'The member token is not the sending member’s.');
    const prior = await findTransfer(this.deps.pool, card.id, d.reference);
    if (prior) {
      if (meta.member_id === undefined) await this.verifyCode(d, meta, card);
      return replayed(prior, d);
    }
    // Refusals that need no lock come before the code is spent (a refused transfer changes nothing).
    const balance = (await findBalance(this.deps.pool, card.id, d.from_member_id)) ?? 0;
    if (balance < d.points) {
      await this.deps.members.mustExist(meta, d.from_member_id);
      throw insufficient(balance, d.points);
    }
    await this.deps.members.mustExist(meta, d.from_member_id);
    await this.deps.members.mustExist(meta, d.to_member_id);
    if (meta.member_id === undefined) await this.verifyCode(d, meta, card);
    try {
      return await this.books.inTransaction(meta, { operation: 'points.transfer', data: d, source: 'http' }, (db) =>
        this.move(db, card, d, meta),
      );
    } catch (err) {
      // Another sender's transfer took the reference meanwhile.
      if (!isUniqueViolation(err)) throw err;
      const taken = await findTransfer(this.deps.pool, card.id, d.reference);
      if (!taken) throw err;
      return replayed(taken, d);
    }
  }

  private async transferCard(meta: LedgerMeta, cardId: number): Promise<RuledCard> {
    const card = await cardOfKind(this.deps.cards, meta.tenant_id, cardId, 'points');
    if (!card.transfers_enabled) throw new AppError('transfers_disabled');
    return card;
  }

  /** Without the sender's token, a code of purpose `transfer` for this card; retried under the reference. */
  private async verifyCode(d: TransferRequest, meta: LedgerMeta, card: RuledCard): Promise<void> {
    if (d.verification_code === undefined)
      throw new AppError(
        'member_token_required',
        "A transfer needs the sender's X-Member-Token or a verification_code from transfer/request-otp.",
      );
    const verified = await this.codes.verify(
      { request_id: meta.request_id, tenant_id: meta.tenant_id, idempotency_key: `transfer:${card.id}:${d.reference}` },
      { member_id: d.from_member_id, purpose: 'transfer', code: d.verification_code },
    );
    if (verified.context.card_id !== card.id)
      throw new AppError('invalid_verification_code', 'The code was issued for another card.', {
        reason: 'invalid_code',
      });
  }

  /** The transfer under both accounts' locks: checks, then lots, balances, journal rows, the row and the event. */
  private async move(db: PoolClient, card: RuledCard, d: TransferRequest, meta: LedgerMeta): Promise<TransferAnswer> {
    const at = this.deps.clock.now();
    const from: AccountKey = { tenantId: meta.tenant_id, cardId: card.id, memberId: d.from_member_id };
    const to: AccountKey = { tenantId: meta.tenant_id, cardId: card.id, memberId: d.to_member_id };
    const [first, second] = from.memberId < to.memberId ? [from, to] : [to, from];
    const a = await this.books.settleLocked(db, first, at, first === to);
    const b = await this.books.settleLocked(db, second, at, second === to);
    const sender = first === from ? a : b;
    const receiver = first === to ? a : b;
    const prior = await findTransfer(db, card.id, d.reference);
    if (prior) return replayed(prior, d);
    if (!sender || sender.balance < d.points) throw insufficient(sender?.balance ?? 0, d.points);
    if (!receiver) throw new Error('the account a transfer opened is missing');
    await this.withinCap(db, card, from, d.points, at);
    if (receiver.balance + receiver.pending + receiver.held + d.points > MAX_BALANCE)
      throw new AppError('balance_limit_exceeded', undefined, { max_balance: MAX_BALANCE });
    return this.write(db, card, d, { from, to, fromBalance: sender.balance, toBalance: receiver.balance, at });
  }

  /** The card's monthly cap on what the sender sends (their account is locked: it cannot be raced). */
  private async withinCap(db: PoolClient, card: RuledCard, from: AccountKey, points: number, at: Date): Promise<void> {
    if (card.transfer_monthly_cap === null) return;
    const sent = await sentThisMonth(db, card.id, from.memberId, card.time_zone, at);
    if (sent + points > card.transfer_monthly_cap)
      throw new AppError('transfer_limit_exceeded', undefined, {
        monthly_cap: card.transfer_monthly_cap,
        transferred_this_month: sent,
        points_requested: points,
      });
  }

  /** Lots, balances and the two journal rows; then the transfer's row and its event. */
  private async write(
    db: PoolClient,
    card: RuledCard,
    d: TransferRequest,
    x: { from: AccountKey; to: AccountKey; fromBalance: number; toBalance: number; at: Date },
  ): Promise<TransferAnswer> {
    const { from, to, at } = x;
    const lots = await moveSpendableLots(db, from, to.memberId, d.points, at);
    const earliest = lots.reduce<Date | null>(
      (min, l) => (l.expires_at && (!min || l.expires_at < min) ? l.expires_at : min),
      null,
    );
    await addToBalance(db, from, -d.points, at);
    await addToBalance(db, to, d.points, at, earliest);
    const id = await nextTransferId(db);
    const entry = (k: AccountKey, amount: number, balanceAfter: number, metadata: Record<string, unknown>) =>
      appendJournal(db, k, {
        event: amount < 0 ? 'points_transferred_out' : 'points_transferred_in',
        amount,
        balanceAfter,
        reference: d.reference,
        metadata: { transfer_id: id, ...metadata },
        at,
      });
    const out = await entry(from, -d.points, x.fromBalance - d.points, { to_member_id: to.memberId });
    const into = await entry(to, d.points, x.toBalance + d.points, { from_member_id: from.memberId });
    const answer = answerOf(id, card, d, x, lots);
    await insertTransfer(db, {
      id,
      tenantId: from.tenantId,
      cardId: card.id,
      fromMemberId: from.memberId,
      toMemberId: to.memberId,
      points: d.points,
      reference: d.reference,
      outJournalId: out.id,
      inJournalId: into.id,
      answer,
      at,
    });
    const { lots: _lots, transferred_at: _at, ...fields } = answer;
    await this.deps.outbox.record(db, {
      type: 'points_transferred',
      tenantId: from.tenantId,
      occurredAt: at,
      data: { ...fields, from_transaction_id: out.id, to_transaction_id: into.id },
    });
    return answer;
  }
}

/** The answer of a transfer (stored with it: a retry with its reference is answered the same). */
function answerOf(
  id: number,
  card: RuledCard,
  d: TransferRequest,
  x: { from: AccountKey; to: AccountKey; fromBalance: number; toBalance: number; at: Date },
  lots: MovedLot[],
): TransferAnswer {
  return {
    transfer_id: id,
    card_id: card.id,
    from_member_id: x.from.memberId,
    to_member_id: x.to.memberId,
    points: d.points,
    reference: d.reference,
    from_balance: x.fromBalance - d.points,
    to_balance: x.toBalance + d.points,
    lots: lots.map((l) => ({
      points: l.moved,
      available_at: l.available_at.toISOString(),
      expires_at: l.expires_at?.toISOString() ?? null,
    })),
    transferred_at: x.at.toISOString(),
  };
}
