import { z } from 'zod';
import { Email, Id, MaskedMember, Phone, Text, Timestamp } from '../common.ts';
import { MailLocale } from './mail.ts';
import { defineOperations } from './types.ts';

const base = { service: 'identity', scope: null, tag: 'Member authentication' } as const;

export const CheckMemberBody = z
  .object({ email: Email.optional(), phone: Phone.optional() })
  .refine((b) => b.email !== undefined || b.phone !== undefined, {
    message: 'email or phone is required',
    path: ['email'],
  })
  .meta({
    anyOf: [
      { type: 'object', required: ['email'] },
      { type: 'object', required: ['phone'] },
    ],
  });

export const RegisterBody = z.object({
  name: Text.trim().min(1).max(200),
  email: Email,
  phone: Phone,
  accepts_emails: z.boolean().optional(),
  locale: MailLocale.optional().describe(
    "the language of the member's mail (en, fr, ar); without it, the tenant's default language",
  ),
});

export const RequestOtpBody = z.object({ email: Email });
export const VerifyOtpBody = z.object({
  email: Email,
  code: Text.trim().regex(/^[0-9]{6}$/, 'must be the 6-digit code'),
});

const MemberToken = z
  .object({
    member_token: z.string(),
    expires_at: Timestamp,
    expires_in_minutes: z.number().int(),
  })
  .meta({ id: 'MemberToken' });

/** A member as registration and sign-in show it; contact data masked, `null` when absent. */
const Member = z
  .object({
    id: Id,
    name: z.string(),
    email: z.string().nullable().describe('masked; null when the member has no email'),
    phone: z.string().nullable().describe('masked; null when the member has no phone'),
  })
  .meta({ id: 'Member' });

export const authOperations = defineOperations({
  'member.check': {
    ...base,
    method: 'POST',
    path: '/api/v1/auth/member/check',
    operation: 'member.check',
    memberToken: false,
    idempotent: false,
    summary: 'Check whether a member exists (by email or phone)',
    body: CheckMemberBody,
    response: z.union([
      z.object({ exists: z.literal(true), is_active: z.boolean(), member: MaskedMember }),
      z.object({ exists: z.literal(false), registration_endpoint: z.string() }),
    ]),
    errors: [],
  },
  'member.register': {
    ...base,
    method: 'POST',
    path: '/api/v1/auth/member/register',
    operation: 'member.register',
    memberToken: false,
    idempotent: true,
    summary: 'Register a member; a one-time code is mailed',
    body: RegisterBody,
    response: z.object({
      message: z.string(),
      member: Member,
      otp_expires_in_minutes: z.number().int(),
      otp_code: z.string().optional().describe('sandbox tenants only'),
    }),
    errors: [
      'email_taken',
      'phone_taken',
      'otp_cooldown',
      'otp_hourly_limit',
      'email_delivery_failed',
      'tenant_not_found',
    ],
  },
  'member.request_otp': {
    ...base,
    method: 'POST',
    path: '/api/v1/auth/member/request-otp',
    operation: 'member.request_otp',
    memberToken: false,
    idempotent: false,
    summary: 'Mail a one-time code to an existing member',
    body: RequestOtpBody,
    response: z.object({
      message: z.string(),
      expires_in_minutes: z.number().int(),
      member: MaskedMember,
      otp_code: z.string().optional().describe('sandbox tenants only'),
    }),
    errors: [
      'member_not_found',
      'otp_cooldown',
      'otp_hourly_limit',
      'email_delivery_failed',
      'tenant_not_found',
      'member_inactive',
    ],
  },
  'member.verify_otp': {
    ...base,
    method: 'POST',
    path: '/api/v1/auth/member/verify-otp',
    operation: 'member.verify_otp',
    memberToken: false,
    idempotent: false,
    summary: 'Verify a one-time code and issue a member token',
    body: VerifyOtpBody,
    response: z.object({ ...MemberToken.shape, member: Member }),
    errors: ['invalid_otp', 'otp_expired', 'otp_attempts_exceeded', 'member_not_found'],
  },
  'member.refresh': {
    ...base,
    method: 'POST',
    path: '/api/v1/auth/member/refresh',
    operation: 'member.refresh',
    memberToken: true,
    idempotent: false,
    summary: 'Rotate the member token: a new token is issued and the presented one stops working',
    response: MemberToken,
    errors: ['member_token_required', 'invalid_member_token'],
  },
  'member.logout': {
    ...base,
    method: 'POST',
    path: '/api/v1/auth/member/logout',
    operation: 'member.logout',
    memberToken: true,
    idempotent: false,
    summary: 'Invalidate the presented member token at once',
    response: z.object({ message: z.string() }),
    errors: ['member_token_required', 'invalid_member_token'],
  },
});
