import type {
  AuditRow as AuditRowSchema,
  CardBalance,
  StaffCard,
  StaffClaimRequest,
  StaffMemberView,
  StaffUser as StaffUserSchema,
} from '@loyalty/contracts/staff';
import type * as z from 'zod';
import { createStaffClient, type Answer } from './client.ts';

export { ApiError, type Answer, type Input } from './client.ts';

/** The console's one client: the page's own origin, the token in this tab's session storage. */
export const { call, upload, download, session, whenSignedOut } = createStaffClient({
  fetch: (url, init) => fetch(url, init),
  storage: () => sessionStorage,
});

// ---- the shapes the pages read, all from the staff contracts ---------------------------------------

export type StaffUser = z.output<typeof StaffUserSchema>;
export type Role = StaffUser['role'];
export type Me = Answer<'staff.me'>;
export type Card = z.output<typeof StaffCard>;
export type Member = z.output<typeof StaffMemberView>;
export type Balance = z.output<typeof CardBalance>;
export type Claim = z.output<typeof StaffClaimRequest>;
export type Pagination = Answer<'staff.claims.list'>['pagination'];
export type AuditRow = z.output<typeof AuditRowSchema>;
