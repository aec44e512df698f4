import { z } from 'zod';
import { commonEnv, databaseEnv, loadConfig, parseMasterKey } from '@loyalty/runtime';

/** A key-encryption key: base64 of 32 bytes. The message never repeats the value. */
const secretsKey = z.string().transform((value, ctx) => {
  const key = parseMasterKey(value);
  if (typeof key === 'string') {
    ctx.addIssue({ code: 'custom', message: key });
    return z.NEVER;
  }
  return key;
});

export const IdentityConfig = z.object({
  ...commonEnv,
  ...databaseEnv,
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9101),
  /** SMTP server for members' mail, e.g. smtp://user:pass@mail.example.com:587 */
  SMTP_URL: z.string().default('smtp://127.0.0.1:1025'),
  /**
   * Sandbox tenants' mail goes here (a sink). Unset (or empty): their mail is not sent at all,
   * never to SMTP_URL (a sandbox's codes are in the API's answers anyway).
   */
  SANDBOX_SMTP_URL: z
    .string()
    .optional()
    .transform((v) => v || undefined),
  MAIL_FROM: z.string().default('Loyalty <no-reply@loyalty.local>'),
  /**
   * The key-encryption key of tenants' SMTP passwords (the webhooks service's SECRETS_KEY: base64
   * of 32 bytes). Unset: no tenant can store an SMTP password (503 secrets_key_missing).
   */
  SECRETS_KEY: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .pipe(secretsKey.optional()),
  /** The SECRETS_KEY before a rotation: still read; identity rewraps its data keys at start. */
  SECRETS_KEY_PREVIOUS: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .pipe(secretsKey.optional()),
  /**
   * The platform operator's address: told about a tenant's integration (a webhook endpoint disabled
   * after three days of failures) when the tenant has no contact email. Unset: only logged.
   */
  OPERATOR_EMAIL: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .pipe(z.email({ message: 'must be an email address' }).optional()),
  /** Notification mails each sender sends at once, over as many pooled SMTP connections. */
  MAIL_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
  /** Notification mails per second per replica (0 = unlimited); codes are never throttled. */
  MAIL_NOTIFICATIONS_PER_SECOND: z.coerce.number().int().min(0).default(10),
  /**
   * Points-earned mail: a member's earns within this many seconds of the first become one mail
   * (0: each earn is mailed on the sender's next turn, still summed with any that arrived meanwhile).
   */
  EARN_MAIL_WINDOW_SECONDS: z.coerce.number().int().min(0).default(60),
  /** How often each replica looks for points-earned mails that are due, and notifications to retry. */
  EARN_MAIL_INTERVAL_MS: z.coerce.number().int().positive().default(1000),
  /** Key of the HMAC under which one-time codes are stored. */
  OTP_SECRET: z.string().min(16, 'must be at least 16 characters'),
  /**
   * Key of the audit chain (HMAC-SHA256 of every new row, signature of the anchors). Kept outside
   * the database: whoever can write the audit tables without it cannot make rows or anchors that verify.
   */
  AUDIT_KEY: z.string().min(32, 'must be at least 32 characters'),
  /** Retired audit keys, comma-separated: rows and anchors they signed still verify (key rotation). */
  AUDIT_PREVIOUS_KEYS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? '')
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().min(32, 'each key must be at least 32 characters'))),
  /** How often each replica anchors the audit chain heads that moved (signs, stores, logs and publishes them). */
  AUDIT_ANCHOR_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  OTP_TTL_MINUTES: z.coerce.number().int().positive().default(10),
  OTP_MAX_ATTEMPTS: z.coerce.number().int().positive().default(5),
  OTP_RESEND_COOLDOWN_SECONDS: z.coerce.number().int().min(0).default(60),
  OTP_HOURLY_LIMIT: z.coerce.number().int().positive().default(5),
  /**
   * Where the API is reached from outside (scheme, host, port, e.g. https://api.loyalty.example):
   * the one-click unsubscribe links of marketing mail point to `<PUBLIC_URL>/api/v1/unsubscribe`.
   */
  PUBLIC_URL: z.url({ message: 'must be a URL, e.g. https://api.loyalty.example' }).default('http://127.0.0.1:3000'),
  /**
   * How long a member's erasure or merge waits for another service's part of it before trying again
   * (also the operator's export and purge of a tenant asking each service to start its job).
   */
  MEMBER_DATA_TIMEOUT_MS: z.coerce.number().int().positive().default(20_000),
  MEMBER_TOKEN_TTL_MINUTES: z.coerce.number().int().positive().default(60),
  /** How long a deactivated tenant is kept before the operator may purge it. */
  TENANT_PURGE_RETENTION_DAYS: z.coerce.number().int().min(0).default(30),
  /** Staff token (console session) validity: a working day. */
  STAFF_TOKEN_TTL_MINUTES: z.coerce.number().int().positive().default(720),
});
export type IdentityConfig = z.infer<typeof IdentityConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(IdentityConfig, env);
