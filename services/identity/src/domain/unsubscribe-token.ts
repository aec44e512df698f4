import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ConsentPurpose } from '@loyalty/contracts';

/**
 * The token of a marketing mail's one-click unsubscribe link (RFC 8058): it names the tenant, the
 * member and the purpose, signed with a key derived from `OTP_SECRET` for this use only, so the
 * link works without signing in and cannot be made for another member. It does not expire: an
 * unsubscribe link must keep working as long as the mail is read.
 * `u1.<tenant>.<member>.<purpose>.<signature>` (signature: HMAC-SHA256, base64url).
 */
export class UnsubscribeTokens {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHmac('sha256', secret).update('loyalty-unsubscribe-link').digest();
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }

  issue(t: { tenantId: number; memberId: number; purpose: ConsentPurpose }): string {
    const body = ['u1', t.tenantId, t.memberId, t.purpose].join('.');
    return `${body}.${this.sign(body)}`;
  }

  /** What a token names, or undefined when it is not one this platform signed. */
  read(token: string): { tenantId: number; memberId: number; purpose: ConsentPurpose } | undefined {
    const m = /^u1\.(\d{1,15})\.(\d{1,15})\.(marketing_email|marketing_sms)\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!m) return undefined;
    const [, tenant, member, purpose, signature] = m;
    if (!tenant || !member || !signature || (purpose !== 'marketing_email' && purpose !== 'marketing_sms'))
      return undefined;
    const expected = Buffer.from(this.sign(`u1.${tenant}.${member}.${purpose}`));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    return { tenantId: Number(tenant), memberId: Number(member), purpose };
  }
}
