import type { Queryable } from '@loyalty/runtime';
import type { UnsubscribeTokens } from '../domain/unsubscribe-token.ts';
import { consentHolds } from '../store/consents.ts';

/**
 * Every mail identity sends to a member is one of two kinds:
 * - `transactional`: what the member asked for or must know about their account (sign-in and
 *   claim codes, a claim's decision, the points-earned digest that is the receipt of their own
 *   purchases): sent whatever their consents;
 * - `marketing`: what invites them to buy or spend (expiry warnings): sent
 *   only while their `marketing_email` consent holds, checked when it is decided and again just
 *   before it goes, and carrying a one-click unsubscribe (RFC 8058).
 */
export type MailCategory = 'transactional' | 'marketing';

/** The one-click unsubscribe of a member's marketing mail: its link, headers and footer. */
export class MarketingLinks {
  constructor(
    /** Where the gateway is reached from outside (PUBLIC_URL): the links point there. */
    private readonly publicUrl: string,
    private readonly tokens: UnsubscribeTokens,
  ) {}

  url(tenantId: number, memberId: number): string {
    const token = this.tokens.issue({ tenantId, memberId, purpose: 'marketing_email' });
    return `${this.publicUrl.replace(/\/+$/, '')}/api/v1/unsubscribe?token=${encodeURIComponent(token)}`;
  }

  /** RFC 8058: a mail client's one-click button POSTs `List-Unsubscribe=One-Click` to the link. */
  headers(tenantId: number, memberId: number): Record<string, string> {
    return {
      'List-Unsubscribe': `<${this.url(tenantId, memberId)}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    };
  }

  /** Whether a marketing mail may go to the member now. */
  mayMail(db: Queryable, tenantId: number, memberId: number): Promise<boolean> {
    return consentHolds(db, tenantId, memberId, 'marketing_email');
  }
}
