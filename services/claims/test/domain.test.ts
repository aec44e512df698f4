import { describe, expect, it } from 'vitest';
import {
  debitCertainlyNotApplied,
  debitKey,
  decide,
  expiryOf,
  isOverdue,
  pagination,
  HOUR_MS,
} from '../src/domain/claim-request.ts';
import { claimRecord, eventData } from '../src/domain/record.ts';
import type { ClaimRequest } from '../src/store/claim-requests.ts';

const t0 = new Date('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

describe('expiry', () => {
  it('expires a request the card lifetime after its creation', () => {
    expect(expiryOf(t0, 72).toISOString()).toBe('2030-01-04T00:00:00.000Z');
    expect(expiryOf(t0, 1).toISOString()).toBe('2030-01-01T01:00:00.000Z');
  });

  it('counts only a pending request whose expiry has been reached as overdue', () => {
    const expires_at = at(HOUR_MS);
    expect(isOverdue({ status: 'pending', expires_at }, at(HOUR_MS - 1))).toBe(false);
    expect(isOverdue({ status: 'pending', expires_at }, at(HOUR_MS))).toBe(true);
    // An approval that started in time is finished even after the lifetime ends.
    expect(isOverdue({ status: 'approving', expires_at }, at(2 * HOUR_MS))).toBe(false);
    expect(isOverdue({ status: 'approved', expires_at }, at(2 * HOUR_MS))).toBe(false);
  });
});

describe('state machine', () => {
  const live = { expires_at: at(HOUR_MS) };
  const now = at(0);

  it('lets approve and reject start only on a pending request', () => {
    expect(decide({ ...live, status: 'pending' }, 'approve', now)).toEqual({ ok: true, resume: false });
    expect(decide({ ...live, status: 'pending' }, 'reject', now)).toEqual({ ok: true, resume: false });
    for (const status of ['approved', 'rejected', 'expired'] as const) {
      expect(decide({ ...live, status }, 'approve', now)).toEqual({ ok: false, expire: false, currentStatus: status });
      expect(decide({ ...live, status }, 'reject', now)).toEqual({ ok: false, expire: false, currentStatus: status });
    }
  });

  it('lets an approval resume a half-done approval but never lets a reject take it', () => {
    expect(decide({ ...live, status: 'approving' }, 'approve', now)).toEqual({ ok: true, resume: true });
    expect(decide({ ...live, status: 'approving' }, 'reject', now)).toEqual({
      ok: false,
      expire: false,
      currentStatus: 'approving',
    });
  });

  it('treats a pending request past its expiry as expired, before any sweep', () => {
    const overdue = { status: 'pending' as const, expires_at: at(-1) };
    expect(decide(overdue, 'approve', now)).toEqual({ ok: false, expire: true, currentStatus: 'expired' });
    expect(decide(overdue, 'reject', now)).toEqual({ ok: false, expire: true, currentStatus: 'expired' });
  });
});

describe('ledger outcomes', () => {
  it('hands a request back to pending only when the debit certainly did not happen', () => {
    expect(debitCertainlyNotApplied('insufficient_points')).toBe(true);
    expect(debitCertainlyNotApplied('wrong_card_type')).toBe(true);
    for (const unsure of ['service_unavailable', 'internal_error', 'idempotency_in_progress', 'idempotency_key_reused'])
      expect(debitCertainlyNotApplied(unsure)).toBe(false);
  });

  it('uses one deterministic debit key per request', () => {
    expect(debitKey(42)).toBe('claim:42');
    expect(debitKey(42)).toBe(debitKey(42));
  });
});

describe('pagination', () => {
  it('says whether more rows follow', () => {
    expect(pagination(20, 0, 45)).toEqual({ limit: 20, offset: 0, total: 45, has_more: true });
    expect(pagination(20, 40, 45)).toEqual({ limit: 20, offset: 40, total: 45, has_more: false });
    expect(pagination(20, 25, 45)).toEqual({ limit: 20, offset: 25, total: 45, has_more: false });
    expect(pagination(10, 0, 0)).toEqual({ limit: 10, offset: 0, total: 0, has_more: false });
  });
});

describe('records', () => {
  const claim: ClaimRequest = {
    id: 7,
    tenant_id: 1,
    card_id: 3,
    member_id: 9,
    reward_id: 4,
    reward_name: 'Free coffee',
    points_cost: 150,
    status: 'approved',
    hold_status: 'captured',
    member_note: 'oat milk',
    staff_note: 'enjoy',
    points_deducted: 150,
    ledger_transaction_id: 88,
    created_at: t0,
    expires_at: at(72 * HOUR_MS),
    approval_started_at: at(1000),
    approval_attempt: 'x',
    approved_at: at(2000),
    rejected_at: null,
    expired_at: null,
    decided_by: null,
  };

  it('builds the full record with the masked member from identity', () => {
    const member = { id: 9, name: 'Jane', email: 'j***@example.com', phone: null, has_email: true, is_active: true };
    expect(claimRecord(claim, member)).toEqual({
      id: 7,
      status: 'approved',
      member: { id: 9, name: 'Jane', email: 'j***@example.com' },
      card_id: 3,
      reward: { id: 4, name: 'Free coffee', points_cost: 150 },
      member_note: 'oat milk',
      staff_note: 'enjoy',
      points_deducted: 150,
      created_at: '2030-01-01T00:00:00.000Z',
      approved_at: '2030-01-01T00:00:02.000Z',
      rejected_at: null,
      expires_at: '2030-01-04T00:00:00.000Z',
    });
    expect(claimRecord(claim, undefined).member).toEqual({ id: 9, name: null, email: null });
  });

  it('gives events what the member mail needs', () => {
    expect(eventData(claim)).toMatchObject({
      claim_request_id: 7,
      member_id: 9,
      reward_name: 'Free coffee',
      points_deducted: 150,
      staff_note: 'enjoy',
    });
  });
});
