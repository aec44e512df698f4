import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Envelope encryption of secrets a service must read back (webhooks' signing secrets, identity's
 * SMTP passwords) with AES-256-GCM (node:crypto): each tenant has a
 * data key of its own, stored wrapped (encrypted) under the key-encryption key `SECRETS_KEY`
 * from the environment; the tenant's secrets are stored encrypted under its data key. Rotating
 * `SECRETS_KEY` rewraps the data keys only (one small row per tenant); the secrets stay as they are.
 *
 * Formats (text, so the columns stay `text`):
 * - a wrapped data key: `k1.<key id>.<iv>.<tag>.<ciphertext>` (base64url), the key id naming the
 *   key-encryption key that wrapped it;
 * - a sealed secret: `s1.<iv>.<tag>.<ciphertext>`. Anything else in a secret column is a
 *   plaintext secret from before encryption (sealed on start).
 * The additional authenticated data binds a ciphertext to its tenant (and a data key to its
 * key id), so rows moved from one tenant to another do not decrypt.
 */

/** A key-encryption key: 32 bytes, and the id its wrapped keys carry. */
export interface MasterKey {
  id: string;
  key: Buffer;
}

const SEALED = 's1.';
const WRAPPED = 'k1.';

/** The id of a key-encryption key: the first 8 bytes of SHA-256 over it, hex (not secret, names it in rows and logs). */
export function masterKey(key: Buffer): MasterKey {
  return { id: createHash('sha256').update('loyalty secrets key id\0').update(key).digest('hex').slice(0, 16), key };
}

/** `SECRETS_KEY`'s value (base64 of 32 random bytes: `openssl rand -base64 32`), or why it is not one. */
export function parseMasterKey(value: string): Buffer | string {
  const key = Buffer.from(value.trim(), 'base64');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(value.trim()) || key.length !== 32)
    return 'must be 32 random bytes in base64 (e.g. openssl rand -base64 32)';
  return key;
}

function encrypt(key: Buffer, plaintext: Buffer, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((b) => b.toString('base64url')).join('.');
}

function decrypt(key: Buffer, parts: string[], aad: string): Buffer {
  const [iv, tag, body] = parts.map((p) => Buffer.from(p, 'base64url'));
  if (!iv || !tag || !body || parts.length !== 3) throw new Error('malformed ciphertext');
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(body), decipher.final()]);
}

/** A new data key for a tenant, and its wrapped form under `master`. */
export function newDataKey(master: MasterKey, tenantId: number): { key: Buffer; wrapped: string } {
  const key = randomBytes(32);
  return { key, wrapped: wrapDataKey(master, tenantId, key) };
}

export function wrapDataKey(master: MasterKey, tenantId: number, key: Buffer): string {
  return `${WRAPPED}${master.id}.${encrypt(master.key, key, `data-key:${tenantId}:${master.id}`)}`;
}

/** The key id a wrapped data key names. */
export function wrappedKeyId(wrapped: string): string {
  return wrapped.startsWith(WRAPPED) ? (wrapped.split('.')[1] ?? '') : '';
}

/** Unwrap a tenant's data key with whichever of `masters` wrapped it; throws when none did. */
export function unwrapDataKey(masters: readonly MasterKey[], tenantId: number, wrapped: string): Buffer {
  const id = wrappedKeyId(wrapped);
  const master = masters.find((m) => m.id === id);
  if (!master)
    throw new Error(
      `the data key of tenant ${tenantId} is wrapped by key ${id || '(unknown)'}, which is neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS`,
    );
  return decrypt(master.key, wrapped.split('.').slice(2), `data-key:${tenantId}:${master.id}`);
}

export function isSealed(value: string): boolean {
  return value.startsWith(SEALED);
}

export function seal(dataKey: Buffer, tenantId: number, plaintext: string): string {
  return `${SEALED}${encrypt(dataKey, Buffer.from(plaintext, 'utf8'), `secret:${tenantId}`)}`;
}

/** A sealed value's plaintext; a value stored before encryption is answered as it is. */
export function open(dataKey: Buffer, tenantId: number, value: string): string {
  if (!isSealed(value)) return value;
  return decrypt(dataKey, value.slice(SEALED.length).split('.'), `secret:${tenantId}`).toString('utf8');
}
