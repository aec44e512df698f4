import { randomInt } from 'node:crypto';

/**
 * Referral code alphabet: Crockford's base32 without 0, 1 (and, as in Crockford, without I, L,
 * O, U), so a code read aloud or copied by hand has no look-alike characters. 30 symbols, 8 of
 * them: 30^8 ~ 6.6e11 codes per tenant, so a random draw collides rarely and a retry fixes it.
 */
export const CODE_ALPHABET = '23456789ABCDEFGHJKMNPQRSTVWXYZ';
export const CODE_LENGTH = 8;

export function generateReferralCode(random: (max: number) => number = randomInt): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[random(CODE_ALPHABET.length)];
  return code;
}

/** What people type: any case, with spaces or hyphens. Returns null when it cannot be a code. */
export function normalizeReferralCode(input: string): string | null {
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  if (code.length !== CODE_LENGTH) return null;
  for (const ch of code) if (!CODE_ALPHABET.includes(ch)) return null;
  return code;
}
