import type { ConsentPurpose } from '@loyalty/contracts';
import type { Queryable } from '@loyalty/runtime';
import { liveMember } from './members.ts';

export const CONSENT_PURPOSES: readonly ConsentPurpose[] = ['marketing_email', 'marketing_sms'];

export interface ConsentRow {
  purpose: ConsentPurpose;
  granted: boolean;
  granted_at: string | null;
  withdrawn_at: string | null;
  source: string | null;
  updated_at: string | null;
}

const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The member's consents, one per purpose. A member without a marketing_email row has the consent
 * given at registration (`accepts_emails`, granted at its creation); a purpose never asked is not
 * granted. Undefined for a member that is not there (unknown, another tenant's, erased).
 */
export async function consentsOf(db: Queryable, tenantId: number, memberId: number): Promise<ConsentRow[] | undefined> {
  const { rows } = await db.query<ConsentRow>(
    `SELECT p.purpose,
            coalesce(c.granted, p.purpose = 'marketing_email' AND m.accepts_emails) AS granted,
            CASE WHEN c.purpose IS NOT NULL THEN ${iso('c.granted_at')}
                 WHEN p.purpose = 'marketing_email' AND m.accepts_emails THEN ${iso('m.created_at')} END AS granted_at,
            ${iso('c.withdrawn_at')} AS withdrawn_at,
            CASE WHEN c.purpose IS NOT NULL THEN c.source
                 WHEN p.purpose = 'marketing_email' AND m.accepts_emails THEN 'registration' END AS source,
            CASE WHEN c.purpose IS NOT NULL THEN ${iso('c.updated_at')}
                 WHEN p.purpose = 'marketing_email' AND m.accepts_emails THEN ${iso('m.created_at')} END AS updated_at
       FROM identity.members m
      CROSS JOIN unnest($3::text[]) WITH ORDINALITY AS p (purpose, n)
       LEFT JOIN identity.member_consents c ON c.member_id = m.id AND c.purpose = p.purpose
      WHERE m.tenant_id = $1 AND m.id = $2 AND ${liveMember('m')}
      ORDER BY p.n`,
    [tenantId, memberId, CONSENT_PURPOSES],
  );
  return rows.length === 0 ? undefined : rows;
}

/** Whether the member's consent to `purpose` holds now (a marketing mail checks it before it goes). */
export async function consentHolds(
  db: Queryable,
  tenantId: number,
  memberId: number,
  purpose: ConsentPurpose,
): Promise<boolean> {
  const consents = await consentsOf(db, tenantId, memberId);
  return consents?.find((c) => c.purpose === purpose)?.granted ?? false;
}

/**
 * Set one consent in the caller's transaction (the member's row locked by the caller). A consent
 * set to what it is already changes nothing (false); otherwise its time of grant or withdrawal,
 * source and update time are written (true). marketing_email keeps `accepts_emails` in step.
 */
export async function setConsent(
  db: Queryable,
  c: { tenantId: number; memberId: number; purpose: ConsentPurpose; granted: boolean; source: string; now: Date },
  current: Pick<ConsentRow, 'granted' | 'granted_at'>,
): Promise<boolean> {
  if (current.granted === c.granted) return false;
  await db.query(
    `INSERT INTO identity.member_consents AS mc (tenant_id, member_id, purpose, granted, granted_at, withdrawn_at, source, updated_at)
     VALUES ($1, $2, $3, $4, CASE WHEN $4 THEN $6::timestamptz ELSE $7::timestamptz END,
             CASE WHEN $4 THEN NULL ELSE $6::timestamptz END, $5, $6)
     ON CONFLICT (member_id, purpose) DO UPDATE SET granted = $4,
       granted_at = CASE WHEN $4 THEN $6::timestamptz ELSE mc.granted_at END,
       withdrawn_at = CASE WHEN $4 THEN mc.withdrawn_at ELSE $6::timestamptz END,
       source = $5, updated_at = $6`,
    [c.tenantId, c.memberId, c.purpose, c.granted, c.source, c.now, current.granted_at],
  );
  if (c.purpose === 'marketing_email')
    await db.query(`UPDATE identity.members SET accepts_emails = $2 WHERE id = $1`, [c.memberId, c.granted]);
  return true;
}
