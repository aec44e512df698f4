import type { Queryable } from '@loyalty/runtime';

/** A mail decided in a consumer's transaction, waiting to be sent after the commit. */
export interface OutgoingMail {
  id: number;
  tenant_id: number;
  source: string;
  kind: string;
  to_address: string;
  subject: string;
  body: string;
  /** The HTML part (null for a mail queued before mail had one). */
  html: string | null;
  sandbox: boolean;
  created_at: Date;
  attempts: number;
  /** `marketing` mail goes only while its member's consent holds (checked again before it goes). */
  category: 'transactional' | 'marketing';
  member_id: number | null;
}

const T = 'identity.outgoing_mails';

/** Record a mail in the caller's transaction; a source recorded before adds nothing (false). */
export async function enqueueMail(
  db: Queryable,
  m: {
    tenantId: number;
    source: string;
    kind: string;
    to: string;
    subject: string;
    body: string;
    html?: string;
    sandbox: boolean;
    now: Date;
    /** A member's marketing mail (the member named): sent only while their consent holds. */
    marketingTo?: number;
  },
): Promise<boolean> {
  const r = await db.query(
    `INSERT INTO ${T} (tenant_id, source, kind, to_address, subject, body, sandbox, created_at, next_attempt_at, category, member_id, html)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10, $11) ON CONFLICT (source) DO NOTHING`,
    [
      m.tenantId,
      m.source,
      m.kind,
      m.to,
      m.subject,
      m.body,
      m.sandbox,
      m.now,
      m.marketingTo === undefined ? 'transactional' : 'marketing',
      m.marketingTo ?? null,
      m.html ?? null,
    ],
  );
  return (r.rowCount ?? 0) > 0;
}

/**
 * Lease up to `limit` due mails until `leaseUntil`: another replica takes none of them (SKIP
 * LOCKED now, the lease afterwards) unless this one dies and the lease runs out.
 */
export async function leaseDueMails(
  db: Queryable,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<OutgoingMail[]> {
  const { rows } = await db.query<OutgoingMail>(
    `UPDATE ${T} m SET next_attempt_at = $2, attempts = m.attempts + 1
      WHERE m.id IN (SELECT id FROM ${T} WHERE next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING m.id, m.tenant_id, m.source, m.kind, m.to_address, m.subject, m.body, m.html, m.sandbox, m.created_at, m.attempts,
                m.category, m.member_id`,
    [now, leaseUntil, limit],
  );
  return rows;
}

/** A mail sent (or given up): it leaves the queue. */
export async function deleteMail(db: Queryable, id: number): Promise<void> {
  await db.query(`DELETE FROM ${T} WHERE id = $1`, [id]);
}

/** A failed attempt: tried again at `retryAt`. */
export async function retryMail(db: Queryable, id: number, retryAt: Date, error: string): Promise<void> {
  await db.query(`UPDATE ${T} SET next_attempt_at = $2, last_error = $3 WHERE id = $1`, [id, retryAt, error]);
}

/** Mails waiting to be sent (a gauge). */
export async function countOutgoingMails(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${T}`);
  return rows[0]?.n ?? 0;
}
