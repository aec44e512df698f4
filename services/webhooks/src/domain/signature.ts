import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/**
 * Stripe-style signatures: `Loyalty-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`,
 * one `v1` per secret that signs (two during a rotation). The timestamp is signed with the body, so
 * a receiver that checks it within a tolerance refuses a captured request replayed later.
 */
export function signature(secret: string | KeyObject, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** A secret as a key object, made once per endpoint instead of once per delivery. */
export function signingKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret, 'utf8'));
}

export function signatureHeader(secrets: readonly (string | KeyObject)[], timestamp: number, body: string): string {
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${signature(s, timestamp, body)}`)].join(',');
}

/** A new endpoint secret: 256 random bits; the whole string is the HMAC key. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}
