import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** A new API key: 256 random bits. Shown once; only its hash is kept. */
export const newApiKey = () => `sk_${randomBytes(32).toString('base64url')}`;
export const newAppId = () => `app_${randomBytes(9).toString('base64url')}`;
/** An opaque member token: 256 random bits. */
export const newMemberToken = () => `mt_${randomBytes(32).toString('base64url')}`;
/** An opaque staff token: 256 random bits. */
export const newStaffToken = () => `st_${randomBytes(32).toString('base64url')}`;

export const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

/** Compare a presented secret with a stored hash without leaking timing. */
export function matchesHash(presented: string, stored: Buffer): boolean {
  const h = sha256(presented);
  return h.length === stored.length && timingSafeEqual(h, stored);
}

/** A 6-digit one-time code, uniformly drawn. */
export const newOtpCode = () => String(randomInt(0, 1_000_000)).padStart(6, '0');

/** OTPs are stored as an HMAC keyed by a server secret and bound to their row's member. */
export function otpHash(secret: string, holder: number | string, code: string): Buffer {
  return createHmac('sha256', secret).update(`${holder}:${code}`).digest();
}

export function otpMatches(secret: string, holder: number | string, code: string, stored: Buffer): boolean {
  const h = otpHash(secret, holder, code);
  return h.length === stored.length && timingSafeEqual(h, stored);
}
