import { AppError, type ConsentPurpose, type Meta, type StaffMeta } from '@loyalty/contracts';
import { auditActor, recordAudit, withTransaction, type Clock, type Outbox, type Pool } from '@loyalty/runtime';
import type { UnsubscribeTokens } from '../domain/unsubscribe-token.ts';
import { consentsOf, setConsent } from '../store/consents.ts';
import { findMemberBy, mergedMembers } from '../store/members.ts';

/**
 * Members' consents: marketing email and marketing SMS, per member, with when each was granted
 * and withdrawn and where the last change came from. Marketing mail goes only while its consent
 * holds (mail/); transactional mail (codes, claim decisions) never asks. A change made by an app is
 * audited (its details name the purposes, not the member's data), as is one recorded by a staff manager; a one-click unsubscribe from a
 * mail's link withdraws with source `unsubscribe_link`.
 */
interface ConsentDeps {
  pool: Pool;
  clock: Clock;
  outbox: Outbox;
  tokens: UnsubscribeTokens;
}

export function memberConsents(deps: ConsentDeps) {
  const { pool } = deps;

  async function read(tenantId: number, memberId: number) {
    const consents = await consentsOf(pool, tenantId, memberId);
    if (!consents) throw new AppError('member_not_found');
    return { member_id: memberId, consents };
  }

  return {
    get: (memberId: number, meta: Meta | StaffMeta) => read(meta.tenant_id, memberId),

    async update(
      d: { member_id: number; consents: { purpose: ConsentPurpose; granted: boolean }[]; source: string },
      meta: Meta | StaffMeta,
    ) {
      await change(deps, meta.tenant_id, d.member_id, d.consents, d.source, meta);
      return read(meta.tenant_id, d.member_id);
    },

    /**
     * A mail's one-click unsubscribe: the consent its token names is withdrawn (again: nothing
     * changes). A member merged away since the mail was sent is the member it was merged into (who
     * took its address where it had none): the link withdraws the survivor's consent.
     */
    async unsubscribe(d: { token: string }) {
      const named = deps.tokens.read(d.token);
      if (!named) throw new AppError('invalid_unsubscribe_token');
      try {
        await change(
          deps,
          named.tenantId,
          await survivorOf(pool, named.tenantId, named.memberId),
          [{ purpose: named.purpose, granted: false }],
          'unsubscribe_link',
        );
      } catch (err) {
        // An erased member has nothing left to withdraw: the link still answers as done.
        if (!(err instanceof AppError && err.code === 'member_not_found')) throw err;
      }
      return { purpose: named.purpose };
    },
  };
}

/** The member a merge chain ends at (the member itself when it was never merged away). */
async function survivorOf(db: Pool, tenantId: number, memberId: number): Promise<number> {
  let id = memberId;
  // A chain is short (each merge makes its source a tombstone); the bound only stops a cycle.
  for (let hops = 0; hops < 100; hops++) {
    const [merged] = await mergedMembers(db, tenantId, [id]);
    if (!merged) return id;
    id = merged.into;
  }
  return id;
}

/** Set the consents given in one transaction, the member's row locked; what changed, for the audit. */
async function change(
  deps: ConsentDeps,
  tenantId: number,
  memberId: number,
  wanted: { purpose: ConsentPurpose; granted: boolean }[],
  source: string,
  audit?: Meta | StaffMeta,
): Promise<void> {
  await withTransaction(deps.pool, async (db) => {
    if (!(await findMemberBy(db, tenantId, { id: memberId }, true))) throw new AppError('member_not_found');
    const current = await consentsOf(db, tenantId, memberId);
    const now = deps.clock.now();
    const changed: Record<string, boolean> = {};
    for (const w of wanted) {
      const before = current?.find((c) => c.purpose === w.purpose) ?? { granted: false, granted_at: null };
      if (await setConsent(db, { tenantId, memberId, purpose: w.purpose, granted: w.granted, source, now }, before))
        changed[w.purpose] = w.granted;
    }
    if (audit && Object.keys(changed).length > 0)
      await recordAudit(
        deps.outbox,
        db,
        tenantId,
        {
          actor: auditActor(audit),
          action: 'consent.changed',
          target: { member_id: memberId },
          amounts: {},
          details: { ...changed, source },
          request_id: audit.request_id,
        },
        now,
      );
  });
}
