import type { components } from './schema.ts';

/** A webhook event as the platform POSTs it: `{id, type, created_at, tenant_id, data}`. */
export interface WebhookEvent<T = Record<string, unknown>> {
  /** The same on every attempt and redelivery: de-duplicate on it. */
  id: string;
  type: string;
  created_at: string;
  tenant_id: number;
  data: T;
}

/** The endpoint record of the API (for reference in handlers). */
export type WebhookEndpoint = components['schemas']['WebhookEndpoint'];

/** Why a webhook request is refused: no or a malformed header, a stale timestamp, no matching signature. */
export class WebhookSignatureError extends Error {
  override name = 'WebhookSignatureError';
  constructor(
    readonly code: 'missing_signature' | 'malformed_signature' | 'timestamp_out_of_tolerance' | 'signature_mismatch',
    message: string,
  ) {
    super(message);
  }
}

export interface VerifyWebhookOptions {
  /** The request body exactly as received (the raw bytes or their UTF-8 text), before any JSON parsing. */
  payload: string | Uint8Array;
  /** The `Loyalty-Signature` header. */
  header: string | null | undefined;
  /** The endpoint's secret; during your own rotation, both (any one matching is enough). */
  secret: string | readonly string[];
  /** How far the signed timestamp may be from now, in seconds (default 300): older requests are replays. */
  toleranceSeconds?: number;
  /** The current time in ms (tests). */
  now?: number;
}

const encoder = new TextEncoder();

function hexBytes(hex: string): Uint8Array | undefined {
  if (!/^[0-9a-f]{64}$/.test(hex)) return undefined;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/**
 * Check a webhook request and answer its event. The header is `t=<unix seconds>,v1=<hex>[,v1=<hex>]`,
 * each `v1` an HMAC-SHA256 of `"<t>.<raw body>"` under a secret (two during the platform's 24-hour
 * secret rotation). The request is genuine when one `v1` matches under one of your secrets and `t`
 * is within the tolerance; throws WebhookSignatureError otherwise. Uses Web Crypto (Node 20+,
 * browsers, workers); the comparison is the platform's constant-time HMAC verify.
 */
export async function verifyWebhookSignature<T = Record<string, unknown>>(
  options: VerifyWebhookOptions,
): Promise<WebhookEvent<T>> {
  const { header } = options;
  if (!header) throw new WebhookSignatureError('missing_signature', 'No Loyalty-Signature header.');
  let timestamp: number | undefined;
  const signatures: Uint8Array[] = [];
  for (const part of header.split(',')) {
    const [key, value] = part.trim().split('=', 2);
    if (key === 't' && value !== undefined && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && value !== undefined) {
      const bytes = hexBytes(value);
      if (bytes) signatures.push(bytes);
    }
  }
  if (timestamp === undefined || signatures.length === 0)
    throw new WebhookSignatureError('malformed_signature', 'The Loyalty-Signature header has no t= or no v1=.');
  const tolerance = options.toleranceSeconds ?? 300;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(now - timestamp) > tolerance)
    throw new WebhookSignatureError(
      'timestamp_out_of_tolerance',
      `The signature is ${now - timestamp} s old; at most ${tolerance} s is accepted.`,
    );
  const body = typeof options.payload === 'string' ? options.payload : new TextDecoder().decode(options.payload);
  const signed = encoder.encode(`${timestamp}.${body}`);
  const secrets = typeof options.secret === 'string' ? [options.secret] : options.secret;
  for (const secret of secrets) {
    const key = await globalThis.crypto.subtle.importKey(
      'raw',
      encoder.encode(secret),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['verify'],
    );
    for (const signature of signatures) {
      if (await globalThis.crypto.subtle.verify('HMAC', key, signature, signed))
        // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- decode boundary: the body is the platform's signed event; the caller names its data type T
        return JSON.parse(body) as WebhookEvent<T>;
    }
  }
  throw new WebhookSignatureError('signature_mismatch', 'No v1 signature matches the secret.');
}
