import type { ClaimRequestRecord, MemberSummary } from '@loyalty/contracts';
import type { ClaimRequest } from '../store/claim-requests.ts';
import { publicStatus } from './claim-request.ts';

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** The full record as list and get return it; personal data comes masked from identity. */
export function claimRecord(c: ClaimRequest, member: MemberSummary | undefined): ClaimRequestRecord {
  return {
    id: c.id,
    status: publicStatus(c.status),
    member: { id: c.member_id, name: member?.name ?? null, email: member?.email ?? null },
    card_id: c.card_id,
    reward: { id: c.reward_id, name: c.reward_name, points_cost: c.points_cost },
    member_note: c.member_note,
    staff_note: c.staff_note,
    points_deducted: c.points_deducted,
    created_at: c.created_at.toISOString(),
    approved_at: iso(c.approved_at),
    rejected_at: iso(c.rejected_at),
    expires_at: c.expires_at.toISOString(),
  };
}

/** What the claim events carry; identity's mail templates read member_id, reward_name, points_deducted, staff_note. */
export function eventData(c: ClaimRequest): Record<string, unknown> {
  return {
    claim_request_id: c.id,
    member_id: c.member_id,
    card_id: c.card_id,
    reward_id: c.reward_id,
    reward_name: c.reward_name,
    points_cost: c.points_cost,
    status: c.status,
    member_note: c.member_note,
    staff_note: c.staff_note,
    points_deducted: c.points_deducted,
    created_at: c.created_at.toISOString(),
    expires_at: c.expires_at.toISOString(),
    approved_at: iso(c.approved_at),
    rejected_at: iso(c.rejected_at),
    expired_at: iso(c.expired_at),
  };
}
