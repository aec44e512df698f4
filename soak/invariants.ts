import pg from 'pg';
import type { NatsConnection } from 'nats';
import { Subjects, webhookTypeOfDomainEvent } from '@loyalty/contracts';
import { connectAs } from '../test/support/nats.ts';
import type { InjectedFault } from './faults.ts';
import type { SoakStack } from './stack.ts';
import type { BadAttempt, OpRecord, Workload } from './workload.ts';

/**
 * The checks at the end of a run, over everything that was acknowledged: exact where they can be
 * (a lost or doubled write is never tolerated), each with the figure it found.
 */
export interface Check {
  name: string;
  ok: boolean;
  figure: string;
  details?: unknown[];
}

export interface Received {
  /** Per endpoint URL path: event id → times answered 200. */
  byPath: Map<string, Map<string, number>>;
}

/** Each key once: acknowledged if any send of it was, refused if every send was, otherwise unknown. */
function byKey(ops: OpRecord[], kinds: string[]): Map<string, { outcome: OpRecord['outcome']; op: OpRecord }> {
  const out = new Map<string, { outcome: OpRecord['outcome']; op: OpRecord }>();
  for (const op of ops) {
    if (!op.key || !kinds.includes(op.kind)) continue;
    const seen = out.get(op.key);
    const rank = { ack: 2, failed: 1, refused: 0 } as const;
    // A member token that stopped between two attempts (its member merged away or erased): the
    // refusal is the credential's, the first attempt's fate is unknown.
    const outcome =
      op.outcome === 'refused' && op.code === 'invalid_member_token' && op.attempts > 1 ? 'failed' : op.outcome;
    if (!seen || rank[outcome] > rank[seen.outcome]) out.set(op.key, { outcome, op });
  }
  return out;
}

/** Effects per key against the outcome: acknowledged → exactly one, refused → none, unknown → at most one. */
function exactlyOnce(
  name: string,
  keys: Map<string, { outcome: OpRecord['outcome']; op?: OpRecord }>,
  effects: Map<string, number>,
): Check {
  let acked = 0;
  let lost = 0;
  let doubled = 0;
  let refusedApplied = 0;
  let unknownApplied = 0;
  let unknown = 0;
  const details: unknown[] = [];
  for (const [key, { outcome, op }] of keys) {
    const n = effects.get(key) ?? 0;
    if (n > 1) doubled += 1;
    if (outcome === 'ack') {
      acked += 1;
      if (n === 0) lost += 1;
    } else if (outcome === 'refused') {
      if (n > 0) refusedApplied += 1;
    } else {
      unknown += 1;
      if (n > 0) unknownApplied += 1;
    }
    if (n > 1 || (outcome === 'ack' && n === 0) || (outcome === 'refused' && n > 0))
      if (details.length < 10)
        // The final answer and the attempts it took: what a refused-but-applied write was told.
        details.push({ key, outcome, effects: n, status: op?.status, code: op?.code, attempts: op?.attempts });
  }
  return {
    name,
    ok: lost === 0 && doubled === 0 && refusedApplied === 0,
    figure: `lost ${lost}, doubled ${doubled} of ${acked.toLocaleString('en')} acknowledged; refused but applied ${refusedApplied}; unanswered ${unknown} (${unknownApplied} applied)`,
    details,
  };
}

async function countBy(db: pg.Client, sql: string, keys: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ k: string; n: string }>(sql, [keys]);
  return new Map(rows.map((r) => [r.k, Number(r.n)]));
}

/** Lost, doubled and refused-but-applied writes, kind by kind. */
export async function checkWrites(db: pg.Client, ops: OpRecord[]): Promise<Check[]> {
  const checks: Check[] = [];
  const kindsByRef = ['points_earn', 'cashback_earn', 'points_redeem', 'cashback_redeem', 'member_event'];
  for (const kind of kindsByRef) {
    const keys = byKey(ops, [kind]);
    const effects = await countBy(
      db,
      `SELECT reference AS k, count(*) AS n FROM ledger.journal
        WHERE reference = ANY($1) AND event NOT IN ('cashback_refunded', 'points_refunded') GROUP BY reference`,
      [...keys.keys()],
    );
    checks.push(exactlyOnce(`${kind}: journal rows by reference`, keys, effects));
  }
  // A transfer is two journal rows by its reference: the sender's and the receiver's.
  const transfers = byKey(ops, ['points_transfer']);
  const moved = await countBy(
    db,
    `SELECT reference AS k, CASE WHEN count(*) = 2 AND count(DISTINCT event) = 2 THEN 1 ELSE count(*) END AS n FROM ledger.journal
      WHERE reference = ANY($1) AND event IN ('points_transferred_out', 'points_transferred_in') GROUP BY reference`,
    [...transfers.keys()],
  );
  checks.push(exactlyOnce('points_transfer: journal row pairs by reference', transfers, moved));
  // Members erased or merged away lose their free text (an adjustment's reason) and move their
  // referrals: checkDataRights checks them.
  const gone = goneMembers(ops);
  const adj = byKey(ops, ['adjustment']);
  for (const [k, v] of adj) if (gone.ids.has((v.op.body as { member_id: number }).member_id)) adj.delete(k);
  checks.push(
    exactlyOnce(
      'adjustment: journal rows by reason',
      adj,
      await countBy(
        db,
        `SELECT substr(metadata->>'reason', 6) AS k, count(*) AS n FROM ledger.journal
          WHERE event = 'staff_adjustment' AND substr(metadata->>'reason', 6) = ANY($1) GROUP BY 1`,
        [...adj.keys()],
      ),
    ),
  );
  for (const kind of ['points_refund', 'cashback_refund']) {
    // A refund names the purchase, not itself: its answer names its journal row; the count of
    // refund rows must lie between the acknowledged refunds and those plus the unanswered ones.
    const keys = byKey(ops, [kind]);
    const event = kind === 'points_refund' ? 'points_refunded' : 'cashback_refunded';
    const ids: number[] = [];
    let unknown = 0;
    for (const { outcome, op } of keys.values()) {
      if (outcome === 'ack' && op.text) {
        const id = (JSON.parse(op.text) as { data?: { transaction_id?: number } }).data?.transaction_id;
        if (typeof id === 'number') ids.push(id);
      } else if (outcome === 'failed') unknown += 1;
    }
    const { rows } = await db.query<{ id: string }>(`SELECT id FROM ledger.journal WHERE event = $1`, [event]);
    const have = new Set(rows.map((r) => Number(r.id)));
    const lost = ids.filter((id) => !have.has(id)).length;
    const distinct = new Set(ids).size;
    const extra = rows.length - distinct;
    const ok = lost === 0 && distinct === ids.length && extra >= 0 && extra <= unknown;
    checks.push({
      name: `${kind}: journal rows named by the answers`,
      ok,
      figure: `lost ${lost}, answers sharing a row ${ids.length - distinct}, rows without an acknowledged answer ${extra} (unanswered ${unknown}) of ${ids.length.toLocaleString('en')} acknowledged`,
    });
  }
  const claims = byKey(ops, ['claim_create']);
  for (const [k, v] of claims)
    if (gone.emails.has((v.op.body as { member_email: string }).member_email)) claims.delete(k);
  checks.push(
    exactlyOnce(
      'claim_create: claim requests by note',
      claims,
      await countBy(
        db,
        `SELECT member_note AS k, count(*) AS n FROM claims.claim_requests WHERE member_note = ANY($1) GROUP BY 1`,
        [...claims.keys()],
      ),
    ),
  );
  const hooks = byKey(ops, ['webhook_create']);
  checks.push(
    exactlyOnce(
      'webhook_create: endpoints by description',
      hooks,
      await countBy(
        db,
        `SELECT description AS k, count(*) AS n FROM webhooks.endpoints WHERE description = ANY($1) GROUP BY 1`,
        [...hooks.keys()],
      ),
    ),
  );
  const regs = byKey(ops, ['register']);
  const emails = new Map<string, { outcome: OpRecord['outcome'] }>();
  for (const { outcome, op } of regs.values()) {
    const email = (op.body as { email: string }).email;
    if (!gone.emails.has(email)) emails.set(email, { outcome });
  }
  checks.push(
    exactlyOnce(
      'register: members by email',
      emails,
      await countBy(db, `SELECT email AS k, count(*) AS n FROM identity.members WHERE email = ANY($1) GROUP BY 1`, [
        ...emails.keys(),
      ]),
    ),
  );
  checks.push(await checkDecisions(db, ops));
  checks.push(await checkReferrals(db, ops, gone.ids));
  return checks;
}

async function checkDecisions(db: pg.Client, ops: OpRecord[]): Promise<Check> {
  const decided = byKey(ops, ['claim_approve', 'claim_reject']);
  const { rows } = await db.query<{ id: string; status: string }>(`SELECT id, status FROM claims.claim_requests`);
  const status = new Map(rows.map((r) => [Number(r.id), r.status]));
  const wrong: unknown[] = [];
  let acked = 0;
  for (const { outcome, op } of decided.values()) {
    if (outcome !== 'ack' || op.claimId === undefined) continue;
    acked += 1;
    const want = op.kind === 'claim_approve' ? 'approved' : 'rejected';
    if (status.get(op.claimId) !== want) wrong.push({ claim: op.claimId, want, is: status.get(op.claimId) });
  }
  const { rows: captured } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ledger.journal WHERE event = 'reward_claimed'`,
  );
  const approved = rows.filter((r) => r.status === 'approved').length;
  const debits = Number(captured[0]?.n ?? 0);
  return {
    name: 'claim decisions: status as answered; one debit per approval',
    ok: wrong.length === 0 && debits === approved,
    figure: `${wrong.length} of ${acked.toLocaleString('en')} acknowledged decisions not in force; ${approved} approved claims, ${debits} reward debits`,
    details: wrong.slice(0, 10),
  };
}

async function checkReferrals(db: pg.Client, ops: OpRecord[], gone: Set<number>): Promise<Check> {
  const applied = byKey(ops, ['referral_apply']);
  const { rows } = await db.query<{ card_id: string; referee_id: string; status: string; bonuses: string }>(
    `SELECT r.card_id, r.referee_id, r.status,
            (SELECT count(*) FROM ledger.journal j WHERE j.event = 'referral_bonus' AND j.card_id = r.card_id
                AND j.id IN (r.referrer_transaction_id, r.referee_transaction_id)) AS bonuses
       FROM referrals.referrals r`,
  );
  const have = new Map(rows.map((r) => [`${r.card_id}:${r.referee_id}`, r]));
  let lost = 0;
  let acked = 0;
  for (const { outcome, op } of applied.values()) {
    if (outcome !== 'ack') continue;
    acked += 1;
    const b = op.body as { card_id: number; referee_member_id: number };
    if (gone.has(b.referee_member_id)) continue; // merged away: the referral moved to the target
    if (!have.has(`${b.card_id}:${b.referee_member_id}`)) lost += 1;
  }
  // A referral whose referrer or referee left (merged away, erased) before it was paid may stay
  // unpaid on that side: left out, but its bonus rows still count against the journal's.
  const { rows: parties } = await db.query<{ card_id: string; referee_id: string; referrer_id: string }>(
    `SELECT card_id, referee_id, referrer_id FROM referrals.referrals`,
  );
  const left = new Set(
    parties
      .filter((p) => gone.has(Number(p.referee_id)) || gone.has(Number(p.referrer_id)))
      .map((p) => `${p.card_id}:${p.referee_id}`),
  );
  const kept = rows.filter((r) => !left.has(`${r.card_id}:${r.referee_id}`));
  const incomplete = kept.filter((r) => r.status !== 'completed' || Number(r.bonuses) !== 2).length;
  const { rows: bonusRows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ledger.journal WHERE event = 'referral_bonus'`,
  );
  const bonuses = Number(bonusRows[0]?.n ?? 0);
  const paid = rows.reduce((n, r) => n + Number(r.bonuses), 0);
  return {
    name: 'referrals: every acknowledged apply recorded, completed, paid once each way',
    ok: lost === 0 && incomplete === 0 && bonuses === paid,
    figure: `lost ${lost} of ${acked.toLocaleString('en')} acknowledged; ${kept.length} referrals, ${incomplete} not completed and paid (${left.size} with a party merged away or erased left out); ${bonuses} bonus rows (want ${paid}, ${kept.length * 2} of them for the kept)`,
  };
}

/** Balances against lots, holds and the journal; holds against pending claims. */
export async function checkBalances(db: pg.Client): Promise<Check[]> {
  const { rows } = await db.query<Record<string, string>>(`
    SELECT a.card_id, a.member_id, a.balance, a.pending, a.held,
           COALESCE(l.spendable, 0) AS spendable, COALESCE(l.pend, 0) AS pend,
           COALESCE(h.holds, 0) AS holds, COALESCE(hl.took, 0) AS took, COALESCE(j.total, 0) AS journal
      FROM ledger.accounts a
      LEFT JOIN (SELECT card_id, member_id, sum(remaining) FILTER (WHERE NOT pending) AS spendable,
                        sum(remaining) FILTER (WHERE pending) AS pend FROM ledger.lots GROUP BY 1, 2) l USING (card_id, member_id)
      LEFT JOIN (SELECT card_id, member_id, sum(amount) AS holds FROM ledger.holds WHERE status = 'held' GROUP BY 1, 2) h USING (card_id, member_id)
      LEFT JOIN (SELECT h.card_id, h.member_id, sum(x.amount) AS took FROM ledger.holds h JOIN ledger.hold_lots x ON x.hold_id = h.id
                  WHERE h.status = 'held' GROUP BY 1, 2) hl USING (card_id, member_id)
      LEFT JOIN (SELECT card_id, member_id, sum(amount) AS total FROM ledger.journal GROUP BY 1, 2) j USING (card_id, member_id)`);
  const bad: unknown[] = [];
  let negative = 0;
  for (const r of rows) {
    const n = Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)]));
    if (n.balance! < 0) negative += 1;
    const agree =
      n.balance === n.spendable &&
      n.pending === n.pend &&
      n.held === n.holds &&
      n.held === n.took &&
      n.journal === n.balance! + n.pending! + n.held!;
    if (!agree && bad.length < 10) bad.push(n);
    if (!agree && bad.length >= 10) bad.push(null);
  }
  const { rows: cards } = await db.query<{ card_id: string; accounts: string; journal: string }>(`
    SELECT c.id AS card_id, COALESCE((SELECT sum(balance + pending + held) FROM ledger.accounts a WHERE a.card_id = c.id), 0) AS accounts,
           COALESCE((SELECT sum(amount) FROM ledger.journal j WHERE j.card_id = c.id), 0) AS journal FROM ledger.cards c`);
  const cardDrift = cards.filter((c) => c.accounts !== c.journal);
  // A hold still held belongs to a claim that is still pending (after the drain nothing is half-way).
  const { rows: holds } = await db.query<{ key: string; status: string | null }>(`
    SELECT h.key, c.status FROM ledger.holds h
      LEFT JOIN claims.claim_requests c ON h.key = 'claim:' || c.id
     WHERE h.status = 'held' AND (c.status IS NULL OR c.status <> 'pending')`);
  const { rows: unheld } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM claims.claim_requests WHERE status = 'pending' AND hold_status <> 'held'`,
  );
  const { rows: heldCount } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ledger.holds WHERE status = 'held'`,
  );
  return [
    {
      name: 'balances: balance = spendable lots, pending = pending lots, held = holds, journal = all three; none negative',
      ok: bad.length === 0 && negative === 0,
      figure: `${bad.length} of ${rows.length.toLocaleString('en')} accounts disagree, ${negative} negative`,
      details: bad.filter(Boolean),
    },
    {
      name: 'totals: per card, the accounts sum to the journal',
      ok: cardDrift.length === 0,
      figure: `${cardDrift.length} of ${cards.length} cards differ`,
      details: cardDrift,
    },
    {
      name: 'holds: every held hold belongs to a pending claim, every pending claim is held',
      ok: holds.length === 0 && Number(unheld[0]?.n) === 0,
      figure: `${holds.length} of ${heldCount[0]?.n} held holds without a pending claim; ${unheld[0]?.n} pending claims without a hold`,
      details: holds.slice(0, 10),
    },
  ];
}

/** The stream's message ids, each with how many messages carry it. */
async function streamIds(nc: NatsConnection, stream: string): Promise<{ ids: Map<string, number>; messages: number }> {
  const jsm = await nc.jetstreamManager();
  const info = await jsm.streams.info(stream);
  const ids = new Map<string, number>();
  let messages = 0;
  if (info.state.messages === 0) return { ids, messages };
  const js = nc.jetstream();
  const consumer = await js.consumers.get(stream);
  const iter = await consumer.consume({ max_messages: 1000 });
  for await (const m of iter) {
    messages += 1;
    const id = m.headers?.get('Nats-Msg-Id') ?? '';
    ids.set(id, (ids.get(id) ?? 0) + 1);
    if (m.info.pending === 0) break;
  }
  await iter.close();
  return { ids, messages };
}

interface Seen {
  schema: string;
  id: string;
  subject: string;
  payload: { type: string; tenant_id: number; occurred_at: string };
}

/** Outbox → JetStream once per event id; every endpoint received every event it subscribed to. */
export async function checkEvents(db: pg.Client, stack: SoakStack, received: Received): Promise<Check[]> {
  const { rows: seen } = await db.query<Seen>(`SELECT schema, id, subject, payload FROM public.soak_outbox_seen`);
  let unpublished = 0;
  for (const s of new Set(seen.map((r) => r.schema))) {
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${s}".outbox WHERE published_at IS NULL`,
    );
    unpublished += Number(rows[0]?.n ?? 0);
  }
  const nc = await connectAs('admin', { url: stack.natsUrl });
  let stream: { ids: Map<string, number>; messages: number };
  try {
    stream = await streamIds(nc, new Subjects(stack.root).streamName());
  } finally {
    await nc.close();
  }
  const missing = seen.filter((s) => !stream.ids.has(s.id));
  const twice = seen.filter((s) => (stream.ids.get(s.id) ?? 0) > 1);
  const checks: Check[] = [
    {
      name: 'events: every outbox event on JetStream exactly once (by event id)',
      ok: missing.length === 0 && twice.length === 0 && unpublished === 0,
      figure: `missing ${missing.length}, duplicated ${twice.length} of ${seen.length.toLocaleString('en')} events recorded; ${unpublished} still unpublished; ${stream.messages.toLocaleString('en')} messages in the stream`,
      details: [...missing.slice(0, 5), ...twice.slice(0, 5)].map((s) => ({ id: s.id, subject: s.subject })),
    },
  ];
  const { rows: endpoints } = await db.query<{
    id: string;
    tenant_id: string;
    url: string;
    event_types: string[];
    created_at: Date;
  }>(`SELECT id, tenant_id, url, event_types, created_at FROM webhooks.endpoints WHERE deleted_at IS NULL AND enabled`);
  let expected = 0;
  let lost = 0;
  let duplicates = 0;
  const lostSample: unknown[] = [];
  for (const e of endpoints) {
    const got = received.byPath.get(new URL(e.url).pathname) ?? new Map<string, number>();
    for (const n of got.values()) if (n > 1) duplicates += n - 1;
    for (const s of seen) {
      const type = webhookTypeOfDomainEvent.get(s.payload.type);
      if (!type || s.payload.tenant_id !== Number(e.tenant_id)) continue;
      if (!(e.event_types.includes('*') || e.event_types.includes(type))) continue;
      if (new Date(s.payload.occurred_at).getTime() < e.created_at.getTime()) continue;
      expected += 1;
      if (!got.has(s.id)) {
        lost += 1;
        if (lostSample.length < 10) lostSample.push({ endpoint: Number(e.id), event: s.id, type });
      }
    }
  }
  checks.push({
    name: 'webhooks: every endpoint received every event it subscribed to (at least once)',
    ok: lost === 0,
    figure: `missing ${lost} of ${expected.toLocaleString('en')} deliveries to ${endpoints.length} endpoints; ${duplicates} duplicates received`,
    details: lostSample,
  });
  return checks;
}

/**
 * A code mail for every acknowledged registration; an earn digest for every member who earned points
 * (the workload's members accept emails at registration: a digest is marketing mail).
 */
export function checkMail(stack: SoakStack, ops: OpRecord[]): Check {
  const to = new Map<string, string[]>();
  for (const m of stack.mail.messages) {
    const list = to.get(m.to) ?? [];
    list.push(m.subject);
    to.set(m.to, list);
  }
  const mailsTo = (email: string) => [...to.entries()].filter(([k]) => k.includes(email)).flatMap(([, v]) => v);
  // Mail still queued for a member erased or merged away is withdrawn: they are left out.
  const gone = goneMembers(ops);
  const registered = byKey(ops, ['register']);
  let codesMissing = 0;
  for (const { outcome, op } of registered.values()) {
    const email = (op.body as { email: string }).email;
    if (outcome === 'ack' && !gone.emails.has(email) && mailsTo(email).length === 0) codesMissing += 1;
  }
  const earners = new Map<number, string>();
  const emailOf = registeredEmails(ops);
  for (const op of ops)
    if (op.kind === 'points_earn' && op.outcome === 'ack') {
      const id = (op.body as { member_id: number }).member_id;
      if (gone.ids.has(id)) continue;
      const email = emailOf.get(id);
      if (email) earners.set(id, email);
    }
  // The digest's subject in each language a member may have chosen (the default templates).
  const isDigest = (subject: string) => /^(You earned|Vous avez gagné|لقد ربحت) /.test(subject);
  let digestsMissing = 0;
  for (const email of earners.values()) if (!mailsTo(email).some(isDigest)) digestsMissing += 1;
  const digests = stack.mail.messages.filter((m) => isDigest(m.subject)).length;
  return {
    name: 'mail: a code for every registration, a digest for every member who earned points',
    ok: codesMissing === 0 && digestsMissing === 0,
    figure: `codes missing ${codesMissing} of ${[...registered.values()].filter((r) => r.outcome === 'ack').length}; digests missing ${digestsMissing} of ${earners.size} members who earned (${digests} digests for ${ops.filter((o) => o.kind === 'points_earn' && o.outcome === 'ack').length} earns); ${stack.mail.messages.length} mails in all`,
  };
}

/** Every tenant's audit chain verifies. */
export async function checkAudit(workload: Workload, gateway: string, operatorToken: string): Promise<Check> {
  const broken: unknown[] = [];
  let rows = 0;
  for (const t of workload.tenants) {
    const res = await fetch(`${gateway}/admin/v1/tenants/${t.id}/audit/verify`, {
      headers: { authorization: `Bearer ${operatorToken}` },
    });
    const body = (await res.json()) as { data?: { valid: boolean; rows_checked: number; problem: unknown } };
    rows += body.data?.rows_checked ?? 0;
    if (!body.data?.valid) broken.push({ tenant: t.id, status: res.status, problem: body.data?.problem });
  }
  return {
    name: 'audit: every tenant chain verifies',
    ok: broken.length === 0,
    figure: `${broken.length} of ${workload.tenants.length} chains broken (${rows.toLocaleString('en')} rows checked)`,
    details: broken,
  };
}

/** Answers to the same key are the first answer, byte for byte. */
export function checkReplays(ops: OpRecord[]): Check {
  // A repeat that got no answer (503s past its retries) has nothing to compare.
  const replays = ops.filter((o) => o.replayOf !== undefined && o.outcome !== 'failed');
  const differ = replays.filter((o) => !o.replayIdentical);
  return {
    name: 'idempotency: a repeated key answers the first answer, byte for byte',
    ok: differ.length === 0,
    figure: `${differ.length} of ${replays.length} repeats differ`,
    details: differ.slice(0, 5).map((o) => ({ kind: o.kind, key: o.key, status: o.status })),
  };
}

/**
 * 5xx only 503, and only inside a fault window plus the allowance; outside them, at most
 * `slowBudget` of the attempts may be timeouts (a loaded machine, no fault: see SoakOptions).
 */
export function checkServerErrors(
  workload: Pick<Workload, 'bad' | 'attemptsTotal'>,
  faults: InjectedFault[],
  allowanceMs: number,
  slowBudget = 0,
): Check {
  const inWindow = (at: number) => faults.some((f) => at >= f.startedAt - 1000 && at <= f.endedAt + allowanceMs);
  const not503 = workload.bad.filter((b) => b.status >= 500 && b.status !== 503);
  const outsideAll = workload.bad.filter((b) => (b.status === 503 || b.status === 0) && !inWindow(b.at));
  const timedOut = (b: BadAttempt) => b.status === 503 && /did not answer in time/.test(b.error ?? '');
  const tolerated = Math.floor(workload.attemptsTotal * slowBudget);
  const slow = outsideAll.filter(timedOut);
  // Timeouts within the budget are reported, not failed; anything else outside a window fails.
  const outside = slow.length <= tolerated ? outsideAll.filter((b) => !timedOut(b)) : outsideAll;
  const n503 = workload.bad.filter((b) => b.status === 503).length;
  const none = workload.bad.filter((b) => b.status === 0).length;
  const budget = slowBudget > 0 ? ` (of them ${slow.length} timeouts, ${tolerated} tolerated)` : '';
  return {
    name: `5xx: only 503 (or no answer), only within a fault window + ${allowanceMs / 1000} s`,
    ok: not503.length === 0 && outside.length === 0,
    figure: `${not503.length} other 5xx; ${outsideAll.length} outside a window${budget}; ${n503} × 503 and ${none} unanswered attempts of ${workload.attemptsTotal.toLocaleString('en')}`,
    details: [...not503.slice(0, 5), ...outside.slice(0, 5), ...outsideByCause(outside, faults)],
  };
}

/** The answers outside the windows grouped by kind and error, each with how long after the last fault it came. */
function outsideByCause(outside: BadAttempt[], faults: InjectedFault[]): Record<string, unknown>[] {
  const groups = new Map<string, { kind: string; error: string; count: number; secondsAfterFault: number[] }>();
  for (const b of outside) {
    const last = faults.filter((f) => f.endedAt <= b.at).at(-1);
    const key = `${b.kind}|${b.error ?? ''}`;
    const g = groups.get(key) ?? { kind: b.kind, error: b.error ?? '', count: 0, secondsAfterFault: [] };
    g.count += 1;
    if (last) g.secondsAfterFault.push(Math.round((b.at - last.endedAt) / 100) / 10);
    groups.set(key, g);
  }
  return [...groups.values()].map((g) => ({
    kind: g.kind,
    error: g.error,
    count: g.count,
    seconds_after_last_fault: [Math.min(...g.secondsAfterFault), Math.max(...g.secondsAfterFault)],
  }));
}

/**
 * Earning rules: no member's counter of a capped rule above its cap, no budget spent past it, and
 * the counters equal to what the journal says each rule gave (rule versions of every earn row).
 */
export async function checkRuleCaps(db: pg.Client): Promise<Check> {
  const { rows: over } = await db.query<{ rule_id: string; member_id: string; period_key: string; given: string }>(`
    SELECT u.rule_id, u.member_id, u.period_key, u.given FROM ledger.rule_member_usage u
      JOIN ledger.rules r ON r.id = u.rule_id JOIN ledger.cards c ON c.id = r.card_id AND c.reward_system = 'points'
      JOIN ledger.rule_versions v ON v.rule_id = r.id AND v.version = r.version
     WHERE u.given > (v.definition->'cap'->>'limit')::numeric`);
  const { rows: spent } = await db.query<{ id: string; budget_used: string }>(`
    SELECT r.id, r.budget_used FROM ledger.rules r JOIN ledger.cards c ON c.id = r.card_id AND c.reward_system = 'points'
      JOIN ledger.rule_versions v ON v.rule_id = r.id AND v.version = r.version
     WHERE v.definition->>'budget' IS NOT NULL AND r.budget_used > (v.definition->>'budget')::numeric`);
  const { rows: drift } = await db.query<{ rule_id: string; member_id: string }>(`
    WITH given AS (
      SELECT (e->>'rule_id')::bigint AS rule_id, j.member_id, sum((e->>'amount')::bigint) AS amount
        FROM ledger.journal_rules j CROSS JOIN LATERAL jsonb_array_elements(j.rules) e
       WHERE j.refund_of IS NULL GROUP BY 1, 2
    ), counted AS (SELECT rule_id, member_id, sum(given) AS amount FROM ledger.rule_member_usage GROUP BY 1, 2)
    SELECT c.rule_id, c.member_id FROM counted c LEFT JOIN given g USING (rule_id, member_id)
     WHERE g.amount IS DISTINCT FROM c.amount`);
  const { rows: totals } = await db.query<{ counters: string; rules: string }>(
    'SELECT (SELECT count(*) FROM ledger.rule_member_usage) AS counters, (SELECT count(*) FROM ledger.rules) AS rules',
  );
  return {
    name: 'earning rules: no member cap and no budget passed; cap counters = what the journal says each rule gave',
    ok: over.length === 0 && spent.length === 0 && drift.length === 0,
    figure: `${over.length} counters over their cap, ${spent.length} budgets overspent, ${drift.length} counters disagreeing with the journal (${totals[0]?.counters ?? 0} counters, ${totals[0]?.rules ?? 0} rules)`,
    details: [...over, ...spent, ...drift].slice(0, 10),
  };
}

/**
 * Earning-rule updates (PATCH, which takes no Idempotency-Key and is never repeated): each
 * acknowledged update answered a version of its own that holds what it asked; each rule's versions
 * after its first number between its acknowledged updates and those plus its unanswered ones (a
 * refused update made none, a rule never updated has one version).
 */
export async function checkRuleUpdates(db: pg.Client, ops: OpRecord[]): Promise<Check> {
  const { rows } = await db.query<{ rule_id: string; version: number; definition: Record<string, unknown> }>(
    'SELECT rule_id, version, definition FROM ledger.rule_versions',
  );
  const versions = new Map<number, Map<number, Record<string, unknown>>>();
  for (const r of rows) {
    const m = versions.get(Number(r.rule_id)) ?? new Map<number, Record<string, unknown>>();
    m.set(Number(r.version), r.definition);
    versions.set(Number(r.rule_id), m);
  }
  const updates = ops.filter((o) => o.kind === 'rule_update');
  const perRule = new Map<number, { answered: number[]; unanswered: number }>();
  for (const id of versions.keys()) perRule.set(id, { answered: [], unanswered: 0 });
  const details: unknown[] = [];
  let wrong = 0;
  for (const o of updates) {
    const ruleId = Number(o.path.split('/').at(-1));
    const r = perRule.get(ruleId) ?? { answered: [], unanswered: 0 };
    perRule.set(ruleId, r);
    if (o.outcome === 'failed') r.unanswered += 1;
    if (o.outcome !== 'ack') continue;
    const version = o.text
      ? (JSON.parse(o.text) as { data?: { rule?: { version?: number } } }).data?.rule?.version
      : undefined;
    const definition = version === undefined ? undefined : versions.get(ruleId)?.get(version);
    const asked = Object.entries(o.body as Record<string, unknown>);
    if (version !== undefined) r.answered.push(version);
    if (!definition || asked.some(([k, v]) => definition[k] !== v)) {
      wrong += 1;
      if (details.length < 10) details.push({ rule: ruleId, asked: o.body, version, definition: definition ?? null });
    }
  }
  let shared = 0;
  let outOfRange = 0;
  let added = 0;
  for (const [ruleId, r] of perRule) {
    const distinct = new Set(r.answered).size;
    shared += r.answered.length - distinct;
    const extra = (versions.get(ruleId)?.size ?? 0) - 1;
    added += Math.max(0, extra);
    if (extra < r.answered.length || extra > r.answered.length + r.unanswered) {
      outOfRange += 1;
      if (details.length < 10)
        details.push({ rule: ruleId, new_versions: extra, acknowledged: r.answered.length, unanswered: r.unanswered });
    }
  }
  const count = (outcome: OpRecord['outcome']) => updates.filter((o) => o.outcome === outcome).length;
  return {
    name: 'rule updates: one new version per acknowledged update, holding what it asked; none per refused one',
    ok: wrong === 0 && shared === 0 && outOfRange === 0,
    figure: `${count('ack')} updates acknowledged, ${count('refused')} refused, ${count('failed')} unanswered; ${added} new versions of ${versions.size} rules; ${wrong} answers naming a version missing or not holding the update, ${shared} versions answered twice, ${outOfRange} rules whose new versions are not between the acknowledged updates and those plus the unanswered`,
    details,
  };
}

/** Members' ids and emails from the acknowledged registrations. */
function registeredEmails(ops: OpRecord[]): Map<number, string> {
  const emailOf = new Map<number, string>();
  for (const op of ops)
    if (op.kind === 'register' && op.outcome === 'ack' && op.text) {
      const id = (JSON.parse(op.text) as { data?: { member?: { id?: number } } }).data?.member?.id;
      if (id) emailOf.set(id, (op.body as { email: string }).email);
    }
  return emailOf;
}

const memberOfPath = (op: OpRecord): number => Number(/\/members\/(\d+)\//.exec(op.path)?.[1]);

/**
 * Members whose personal data may have gone: every member an erasure or a merge (as its source)
 * was asked for, answered or not. The checks keyed by a member's email or free text leave them out;
 * checkDataRights checks them instead.
 */
export function goneMembers(ops: OpRecord[]): { ids: Set<number>; emails: Set<string> } {
  const ids = new Set<number>();
  for (const op of ops) {
    if (op.kind === 'member_erase') ids.add(memberOfPath(op));
    if (op.kind === 'member_merge') ids.add((op.body as { source_member_id: number }).source_member_id);
  }
  const emailOf = registeredEmails(ops);
  const emails = new Set([...ids].flatMap((id) => (emailOf.has(id) ? [emailOf.get(id)!] : [])));
  return { ids, emails };
}

/**
 * Members' data rights under faults: every acknowledged erasure left a tombstone without name,
 * email or phone; every acknowledged merge left its source pointing at its target with nothing
 * on its accounts (a credit racing the merge went to the target); every job of every service
 * finished (none failed, none left running); every executed import's members exist exactly once.
 */
export async function checkDataRights(db: pg.Client, ops: OpRecord[]): Promise<Check[]> {
  const erased = [...new Set(ops.filter((o) => o.kind === 'member_erase' && o.outcome === 'ack').map(memberOfPath))];
  const { rows: tomb } = await db.query<{ id: string }>(
    `SELECT id FROM identity.members WHERE id = ANY($1) AND erased_at IS NOT NULL
        AND name = '' AND email IS NULL AND phone IS NULL`,
    [erased],
  );
  const merges = ops.filter((o) => o.kind === 'member_merge' && o.outcome === 'ack');
  const sources = merges.map((o) => (o.body as { source_member_id: number }).source_member_id);
  const { rows: merged } = await db.query<{ id: string; merged_into: string | null; left: string }>(
    `SELECT m.id, m.merged_into,
            COALESCE((SELECT sum(abs(balance) + abs(pending) + abs(held)) FROM ledger.accounts a WHERE a.member_id = m.id), 0) AS left
       FROM identity.members m WHERE m.id = ANY($1)`,
    [sources],
  );
  const into = new Map(merged.map((r) => [Number(r.id), r]));
  const badMerges = merges.flatMap((o) => {
    const source = (o.body as { source_member_id: number }).source_member_id;
    const r = into.get(source);
    return r && Number(r.merged_into) === memberOfPath(o) && Number(r.left) === 0
      ? []
      : [{ source, target: memberOfPath(o), merged_into: r?.merged_into, left: r?.left }];
  });
  const { rows: schemas } = await db.query<{ s: string }>(
    `SELECT table_schema AS s FROM information_schema.tables WHERE table_name = 'jobs' AND table_schema <> 'public'`,
  );
  const jobs: { schema: string; kind: string; status: string; n: number }[] = [];
  for (const { s } of schemas) {
    const { rows } = await db.query<{ kind: string; status: string; n: string }>(
      `SELECT kind, status, count(*) AS n FROM "${s}".jobs GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    for (const r of rows) jobs.push({ schema: s, kind: r.kind, status: r.status, n: Number(r.n) });
  }
  const unfinished = jobs.filter((j) => j.status !== 'succeeded');
  const executed = ops.filter((o) => o.kind === 'import_execute' && o.outcome === 'ack');
  const wanted = [...new Set(executed.flatMap((o) => (o.body as { external_ids: string[] }).external_ids))];
  const { rows: imported } = await db.query<{ external_id: string; n: string }>(
    `SELECT external_id, count(*) AS n FROM identity.members WHERE external_id = ANY($1) GROUP BY 1`,
    [wanted],
  );
  const importedOnce = imported.filter((r) => Number(r.n) === 1).length;
  const importsNotDone = await db.query<{ status: string; n: string }>(
    `SELECT status, count(*) AS n FROM identity.imports WHERE status NOT IN ('executed', 'validated') GROUP BY 1`,
  );
  return [
    {
      name: 'erasures: every acknowledged erasure left a tombstone without name, email or phone',
      ok: tomb.length === erased.length,
      figure: `${erased.length - tomb.length} of ${erased.length} erased members still hold personal data or are not tombstones`,
    },
    {
      name: 'merges: every acknowledged merge left its source pointing at its target, its accounts empty',
      ok: badMerges.length === 0,
      figure: `${badMerges.length} of ${merges.length} merges wrong`,
      details: badMerges.slice(0, 10),
    },
    {
      name: 'jobs: every job of every service succeeded (none failed, none left queued or running)',
      ok: unfinished.length === 0,
      figure: `${jobs.reduce((n, j) => n + j.n, 0)} jobs: ${jobs.map((j) => `${j.schema} ${j.kind} ${j.status} ${j.n}`).join(', ') || 'none'}`,
      details: unfinished,
    },
    {
      name: 'imports: every member of an executed import exists exactly once (a file sent twice changes nothing)',
      ok: importedOnce === wanted.length && importsNotDone.rows.length === 0,
      figure: `${importedOnce} of ${wanted.length} imported members exactly once; ${executed.length} executions acknowledged; imports not finished: ${importsNotDone.rows.map((r) => `${r.status} ${r.n}`).join(', ') || 'none'}`,
    },
  ];
}

/**
 * Tiers: each member's counter of the window equals the sum of its qualifying days, no member sits
 * below the tier their total reaches (upgrades happen in the earn; nothing downgrades during a
 * run: the ladder's window is lifetime), and no member was upgraded to the same tier twice (two
 * earns crossing together upgrade once).
 */
export async function checkTiers(db: pg.Client): Promise<Check> {
  const { rows: wrong } = await db.query<Record<string, string>>(`
    SELECT mt.card_id, mt.member_id, mt.rank, mt.qualifying,
           COALESCE((SELECT sum(amount) FROM ledger.tier_days d WHERE d.card_id = mt.card_id AND d.member_id = mt.member_id
                      AND d.day >= mt.counted_from), 0) AS days,
           (SELECT max(rank) FROM ledger.tiers t WHERE t.card_id = mt.card_id AND t.entry_threshold <= mt.qualifying) AS reached
      FROM ledger.member_tiers mt
     WHERE mt.qualifying <> COALESCE((SELECT sum(amount) FROM ledger.tier_days d WHERE d.card_id = mt.card_id
                                        AND d.member_id = mt.member_id AND d.day >= mt.counted_from), 0)
        OR mt.rank < (SELECT max(rank) FROM ledger.tiers t WHERE t.card_id = mt.card_id AND t.entry_threshold <= mt.qualifying)`);
  const { rows: counts } = await db.query<{ members: string; upgraded: string }>(
    `SELECT count(*) AS members, count(*) FILTER (WHERE rank > (SELECT min(rank) FROM ledger.tiers t WHERE t.card_id = mt.card_id)) AS upgraded
       FROM ledger.member_tiers mt`,
  );
  const { rows: twice } = await db.query<{ k: string; n: string }>(`
    SELECT concat_ws(':', payload->'data'->>'card_id', payload->'data'->>'member_id', payload->'data'->>'to') AS k, count(*) AS n
      FROM public.soak_outbox_seen WHERE payload->>'type' = 'ledger.tier_upgraded' GROUP BY 1 HAVING count(*) > 1`);
  const { rows: upgrades } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM public.soak_outbox_seen WHERE payload->>'type' = 'ledger.tier_upgraded'`,
  );
  return {
    name: 'tiers: counters = qualifying days, nobody below the tier their total reaches, one upgrade per crossing',
    ok: wrong.length === 0 && twice.length === 0,
    figure: `${wrong.length} of ${counts[0]?.members ?? 0} member tiers wrong (${counts[0]?.upgraded ?? 0} above the lowest); ${upgrades[0]?.n ?? 0} upgrade events, ${twice.length} members upgraded twice to one tier`,
    details: [...wrong.slice(0, 5), ...twice.slice(0, 5)],
  };
}

/**
 * Exports: each tenant's journal of each card, exported through the gateway after the load, is the
 * journal row for row (ids, members, events, amounts and balances in the card's unit), and no
 * export made during the load was answered with a server error.
 */
export async function checkExports(
  db: pg.Client,
  exported: { tenantId: number; cardId: number; status: number; rows: unknown[] }[],
  ops: OpRecord[],
): Promise<Check> {
  const details: unknown[] = [];
  let rows = 0;
  for (const e of exported) {
    if (e.status !== 200) {
      details.push({ card: e.cardId, status: e.status });
      continue;
    }
    const { rows: journal } = await db.query<{ line: string; cashback: boolean }>(
      `SELECT concat_ws('|', j.id, j.member_id, j.event, j.amount, j.balance_after) AS line,
              c.reward_system = 'cashback' AS cashback
         FROM ledger.journal j JOIN ledger.cards c ON c.id = j.card_id
        WHERE j.card_id = $1 ORDER BY j.id`,
      [e.cardId],
    );
    // A cashback card's amounts are exported in currency units with two decimals: back to cents.
    const cashback = journal[0]?.cashback ?? false;
    const unit = (v: unknown) => String(cashback ? Math.round(Number(v) * 100) : v);
    const lines = e.rows
      .map((r) => {
        const o = r as Record<string, unknown>;
        return [o.id, o.member_id, o.event, unit(o.amount), unit(o.balance_after)].join('|');
      })
      .sort((a, b) => Number(a.split('|')[0]) - Number(b.split('|')[0]));
    rows += lines.length;
    const want = journal.map((r) => r.line);
    if (lines.length !== want.length || lines.some((l, i) => l !== want[i]))
      details.push({
        card: e.cardId,
        exported: lines.length,
        journal: want.length,
        first_difference: lines.find((l, i) => l !== want[i]),
      });
  }
  const during = ops.filter((o) => o.kind === 'journal_export');
  const failed = during.filter((o) => o.outcome === 'failed');
  return {
    name: 'exports: every card journal exported after the load equals the journal row for row',
    ok: details.length === 0 && exported.length > 0,
    figure: `${exported.length} card journals, ${rows} rows; ${during.length} exports during the load (${failed.length} without an answer after retries)`,
    details,
  };
}

/**
 * Job results: every journal export run as a job and downloaded during the load (GET
 * /api/v1/jobs/{job_id}/result, by the app that started it) holds journal rows only, field for
 * field (ids, cards, members, events, amounts and balances in the card's unit), each once; and no
 * download of a succeeded job's result was refused. (Jobs that failed or never ended fail the jobs
 * check.) Whether a result holds every row of its range is not judged: a posting whose transaction
 * began before the export's end may commit after the export read past it.
 */
export async function checkJobResults(db: pg.Client, ops: OpRecord[]): Promise<Check> {
  const downloads = ops.filter((o) => o.kind === 'job_result');
  const read = downloads.filter((o) => o.outcome === 'ack' && o.rows);
  const ids = [...new Set(read.flatMap((o) => o.rows!.map((l) => Number(l.split('|')[0]))))].filter(
    Number.isSafeInteger,
  );
  const { rows } = await db.query<{ id: string; line: string; cashback: boolean }>(
    `SELECT j.id, concat_ws('|', j.id, j.card_id, j.member_id, j.event, j.amount, j.balance_after) AS line,
            c.reward_system = 'cashback' AS cashback
       FROM ledger.journal j JOIN ledger.cards c ON c.id = j.card_id WHERE j.id = ANY($1)`,
    [ids],
  );
  const journal = new Map(rows.map((r) => [Number(r.id), r]));
  const details: unknown[] = [];
  let total = 0;
  let wrong = 0;
  let repeated = 0;
  for (const o of read) {
    const seen = new Set<number>();
    for (const l of o.rows!) {
      total += 1;
      const [id, card, member, event, amount, balance] = l.split('|');
      if (seen.has(Number(id))) {
        repeated += 1;
        if (details.length < 10) details.push({ path: o.path, repeated: l });
        continue;
      }
      seen.add(Number(id));
      const j = journal.get(Number(id));
      // A cashback card's amounts are exported in currency units with two decimals: back to cents.
      const unit = (v: string | undefined) => String(j?.cashback ? Math.round(Number(v) * 100) : v);
      if (j?.line !== [id, card, member, event, unit(amount), unit(balance)].join('|')) {
        wrong += 1;
        if (details.length < 10) details.push({ path: o.path, exported: l, journal: j?.line ?? null });
      }
    }
  }
  const started = ops.filter((o) => o.kind === 'export_job');
  const refused = downloads.filter((o) => o.outcome === 'refused');
  for (const o of refused.slice(0, 5)) details.push({ path: o.path, status: o.status, code: o.code });
  return {
    name: "job results: each export job's result downloaded holds journal rows only, field for field, each once",
    ok: wrong === 0 && repeated === 0 && refused.length === 0,
    figure: `${started.filter((o) => o.outcome === 'ack').length} export jobs started (${started.filter((o) => o.outcome === 'failed').length} unanswered); ${read.length} results downloaded, ${total} rows: ${wrong} not the journal's, ${repeated} repeated; ${refused.length} downloads refused, ${downloads.filter((o) => o.outcome === 'failed').length} without an answer after retries`,
    details,
  };
}
