import { Email, Id, Phone, Text } from '../common.ts';

/** An earn's purchase reference, a redemption's or a refund's reference. */
export const Reference = Text.trim().min(1).max(255);

/** The member of an earn, a refund or a quote: by id, email or phone (at least one; member_id wins). */
export const memberFields = { member_id: Id.optional(), email: Email.optional(), phone: Phone.optional() };
export const needsMember = (b: { member_id?: number; email?: string; phone?: string }) =>
  b.member_id !== undefined || b.email !== undefined || b.phone !== undefined;
export const memberRule = { message: 'member_id, email or phone is required', path: ['member_id'] };
/** The same rule for the reference (a refine is invisible to JSON Schema). */
// Typed objects, so that a generated client keeps the body's own type (an untyped `required` alone reads as `unknown`).
export const memberRequired = [
  { type: 'object', required: ['member_id'] },
  { type: 'object', required: ['email'] },
  { type: 'object', required: ['phone'] },
];
