import { randomBytes } from 'node:crypto';
import { retryingFetch } from '@loyalty/sdk';
import { webhookEventNames } from '@loyalty/contracts';
import { Prng } from './prng.ts';

/**
 * The soak's load: an open arrival process (a fixed number of operations per second, whatever the
 * answers' latency) over several tenants, sent through both gateways with the SDK's retry rules
 * (retryingFetch: a request with an Idempotency-Key is repeated after a network error, a 429, a 503
 * or a 409 idempotency_in_progress; one without a key never is). Every operation and every
 * failed attempt is recorded for the checks at the end.
 */
export const OP_WEIGHTS = {
  register: 6,
  signin: 3,
  points_earn: 20,
  cashback_earn: 15,
  points_redeem: 5,
  cashback_redeem: 8,
  points_refund: 4,
  cashback_refund: 4,
  quote: 6,
  claim: 5,
  claim_approve: 2,
  claim_reject: 2,
  referral: 3,
  adjustment: 3,
  member_event: 2,
  points_transfer: 2,
  report: 1,
  tier_read: 2,
  consent: 1,
  member_merge: 0.4,
  member_erase: 0.3,
  member_import: 0.05,
  webhook_create: 0.3,
  webhook_rotate: 0.5,
  locale: 1,
  journal_export: 0.3,
  job_result: 0.3,
  rule_update: 0.5,
} as const;
type Scenario = keyof typeof OP_WEIGHTS;

/** One HTTP operation (a scenario may make two, e.g. request-otp then verify-otp). */
export interface OpRecord {
  n: number;
  kind: string;
  tenantId: number;
  key?: string;
  method: string;
  path: string;
  body?: unknown;
  startedAt: number;
  endedAt: number;
  /** The final answer's status; 0: no answer (network errors or timeouts outlasted the retries). */
  status: number;
  code?: string;
  attempts: number;
  outcome: 'ack' | 'refused' | 'failed';
  /** The raw answer of an acknowledged write with a key (compared with the replays). */
  text?: string;
  /** Set on a re-send of an acknowledged key: whether its answer was the first one, byte for byte. */
  replayOf?: number;
  replayIdentical?: boolean;
  /** Claim decisions: the claim decided. */
  claimId?: number;
  /**
   * A job result downloaded (a journal export): its rows as `id|card_id|member_id|event|amount|balance_after`,
   * in the card's unit as exported (compared with the journal at the end).
   */
  rows?: string[];
}

/** An attempt answered with a 5xx or not at all (the 5xx invariant reads these). */
export interface BadAttempt {
  at: number;
  kind: string;
  status: number;
  gateway: string;
  error?: string;
}

export interface Member {
  id: number;
  email: string;
  token?: string;
  otpAt: number;
  claimOtps: number;
}

export interface Tenant {
  id: number;
  appId: string;
  apiKey: string;
  pointsCard: number;
  cashbackCard: number;
  reward: number;
  rewardCost: number;
  staffToken: string;
  members: Member[];
  earned: { card: 'points' | 'cashback'; reference: string; memberId: number }[];
  pendingClaims: { id: number; at: number }[];
  endpoints: { id: number; url: string }[];
  referred: Set<number>;
  /** The points card's earning rules (the multiplier, the capped bonus, the birthday rule). */
  rules: { id: number; kind: 'multiplier' | 'fixed' | 'event' }[];
}

const PER_ATTEMPT_TIMEOUT_MS = 8000;

export class Workload {
  readonly ops: OpRecord[] = [];
  readonly bad: BadAttempt[] = [];
  readonly tenants: Tenant[] = [];
  attemptsTotal = 0;
  shed = 0;
  inFlight = 0;
  private n = 0;
  private memberSeq = 0;
  private readonly run = randomBytes(3).toString('hex');
  private readonly rng: Prng;
  private readonly pending = new Set<Promise<void>>();
  private readonly byN = new Map<number, OpRecord>();

  constructor(
    private readonly gateways: string[],
    private readonly operatorToken: string,
    private readonly hookUrl: (path: string) => string,
    seed: string,
  ) {
    this.rng = new Prng(`${seed}:workload`);
  }

  /** One HTTP call through the SDK's retry rules, each attempt on the next gateway. */
  async call(
    kind: string,
    tenant: Tenant | undefined,
    method: string,
    path: string,
    opts: {
      body?: unknown;
      key?: string;
      /** What makes the write once when it has no Idempotency-Key (a member event's reference): checked like a key. */
      reference?: string;
      memberToken?: string;
      bearer?: string;
      /** Keep an acknowledged answer's text (kept by default for a write with a key). */
      keepText?: boolean;
      claimId?: number;
      /** A body sent as it is (an import's file) instead of JSON. */
      raw?: { type: string; text: string };
      /** Recorded as the operation's body for the checks, not sent. */
      record?: unknown;
    } = {},
  ): Promise<OpRecord & { data?: Record<string, unknown>; answer?: string }> {
    const n = ++this.n;
    const rec: OpRecord = {
      n,
      kind,
      tenantId: tenant?.id ?? 0,
      key: opts.key ?? opts.reference,
      method,
      path,
      body: opts.record ?? opts.body,
      startedAt: Date.now(),
      endedAt: 0,
      status: 0,
      attempts: 0,
      outcome: 'failed',
      ...(opts.claimId === undefined ? {} : { claimId: opts.claimId }),
    };
    const headers: Record<string, string> = {};
    if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
    else if (tenant) Object.assign(headers, { 'x-app-id': tenant.appId, 'x-api-key': tenant.apiKey });
    if (opts.memberToken) headers['x-member-token'] = opts.memberToken;
    if (opts.key) headers['idempotency-key'] = opts.key;
    const bodyText = opts.raw ? opts.raw.text : opts.body === undefined ? undefined : JSON.stringify(opts.body);
    if (bodyText !== undefined) headers['content-type'] = opts.raw ? opts.raw.type : 'application/json';
    const base = async (request: Request): Promise<Response> => {
      const gateway = this.gateways[(n + rec.attempts) % this.gateways.length]!;
      rec.attempts += 1;
      this.attemptsTotal += 1;
      const at = Date.now();
      try {
        const res = await fetch(`${gateway}${path}`, {
          method: request.method,
          headers: request.headers,
          body: bodyText,
          signal: AbortSignal.timeout(PER_ATTEMPT_TIMEOUT_MS),
        });
        if (res.status >= 500) {
          // Why it failed, for the report: the failure envelope's code and message.
          const failure = (await res
            .clone()
            .json()
            .catch(() => undefined)) as { error?: { code?: string; message?: string } } | undefined;
          const error = failure?.error ? `${failure.error.code}: ${failure.error.message}` : undefined;
          this.bad.push({ at, kind, status: res.status, gateway, ...(error ? { error } : {}) });
        }
        return res;
      } catch (err) {
        this.bad.push({ at, kind, status: 0, gateway, error: err instanceof Error ? err.name : String(err) });
        throw err;
      }
    };
    const retrying = retryingFetch(base, { attempts: 6, baseDelayMs: 250, maxDelayMs: 4000 });
    let data: Record<string, unknown> | undefined;
    let answer: string | undefined;
    try {
      const res = await retrying(new Request(`${this.gateways[0]}${path}`, { method, headers, body: bodyText }));
      const text = await res.text();
      answer = text;
      rec.status = res.status;
      let parsed: { data?: Record<string, unknown>; error?: { code?: string } } = {};
      try {
        parsed = JSON.parse(text) as typeof parsed;
      } catch {
        // not JSON: recorded by its status
      }
      rec.code = parsed.error?.code;
      data = parsed.data;
      // A 409 idempotency_in_progress after the last attempt decided nothing: the first attempt may
      // still apply, so its effect is unknown (at most one), not refused (none).
      const undecided = res.status === 409 && rec.code === 'idempotency_in_progress';
      rec.outcome = res.status < 300 ? 'ack' : res.status < 500 && !undecided ? 'refused' : 'failed';
      if (rec.outcome === 'ack' && (opts.key ? opts.keepText !== false : opts.keepText === true)) rec.text = text;
    } catch {
      rec.status = 0;
      rec.outcome = 'failed';
    }
    rec.endedAt = Date.now();
    this.ops.push(rec);
    this.byN.set(n, rec);
    return { ...rec, data, answer };
  }

  private async admin<T>(method: string, path: string, body?: unknown): Promise<T> {
    const r = await this.call('provision', undefined, method, path, {
      body,
      bearer: this.operatorToken,
      keepText: false,
    });
    if (r.outcome !== 'ack') throw new Error(`${method} ${path}: ${r.status} ${r.code ?? ''}`);
    return r.data as T;
  }

  /** Tenants, each with an app, two cards, a reward, a manager signed in, members and two webhook endpoints. */
  async provision(tenantCount: number, membersPerTenant: number): Promise<void> {
    await Promise.all(Array.from({ length: tenantCount }, (_, i) => this.provisionTenant(i, membersPerTenant)));
  }

  private async provisionTenant(i: number, membersPerTenant: number): Promise<void> {
    {
      const { tenant } = await this.admin<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', {
        name: `Soak ${i + 1}`,
        sandbox: true,
      });
      const { app } = await this.admin<{ app: { app_id: string; api_key: string } }>(
        'POST',
        `/admin/v1/tenants/${tenant.id}/apps`,
        {
          name: 'soak',
          scopes: [
            'points_read',
            'points_write',
            'cashback_read',
            'cashback_write',
            'card_read',
            'webhooks_manage',
            'programme_manage',
            'members_manage',
          ],
        },
      );
      const points = await this.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant.id}/cards`, {
        name: 'Soak points',
        reward_system: 'points',
        points_ratio: 1,
        referrer_bonus: 20,
        referee_bonus: 10,
        transfers_enabled: true,
      });
      const cashback = await this.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant.id}/cards`, {
        name: 'Soak cashback',
        reward_system: 'cashback',
        cashback_config: { cashback_percentage: 10, cashback_min_amount: 0, cashback_max_amount: null },
      });
      const rewardCost = 40;
      const { reward } = await this.admin<{ reward: { id: number } }>(
        'POST',
        `/admin/v1/tenants/${tenant.id}/cards/${points.card.id}/rewards`,
        { name: 'Soak reward', points_cost: rewardCost },
      );
      // Earning rules on the points card, one capped per member and day and with a budget, so earns
      // go through the rules; checkRuleCaps verifies that no cap or budget was passed. Their ids are
      // kept: ruleUpdate retunes them during the load.
      const rules = `/admin/v1/tenants/${tenant.id}/cards/${points.card.id}/rules`;
      type Created = { rule: { id: number } };
      const multiplier = await this.admin<Created>('POST', rules, {
        name: 'Soak x2',
        kind: 'multiplier',
        factor: 2,
        status: 'active',
      });
      const capped = await this.admin<Created>('POST', rules, {
        name: 'Soak capped bonus',
        kind: 'fixed',
        points: 7,
        cap: { limit: 20, period: 'day' },
        budget: 500,
        status: 'active',
      });
      const birthday = await this.admin<Created>('POST', rules, {
        name: 'Soak birthday',
        kind: 'event',
        event: 'birthday',
        points: 25,
        status: 'active',
      });
      // A tier ladder on the points card (lifetime window: no reviews during a run), so earns cross
      // thresholds concurrently; checkTiers verifies one upgrade per crossing.
      await this.admin('PUT', `/admin/v1/tenants/${tenant.id}/cards/${points.card.id}/tiers`, {
        tiers: [
          { name: 'Bronze', rank: 1, entry_threshold: 0, retain_threshold: 0 },
          { name: 'Silver', rank: 2, entry_threshold: 150, retain_threshold: 100 },
          { name: 'Gold', rank: 3, entry_threshold: 600, retain_threshold: 400 },
        ],
        metric: 'points_earned',
        count_bonuses: true,
        window: 'lifetime',
      });
      const managerEmail = `manager.${this.run}.${i}@soak.example`;
      await this.admin('POST', `/admin/v1/tenants/${tenant.id}/staff`, { email: managerEmail, role: 'manager' });
      const t: Tenant = {
        id: tenant.id,
        appId: app.app_id,
        apiKey: app.api_key,
        pointsCard: points.card.id,
        cashbackCard: cashback.card.id,
        reward: reward.id,
        rewardCost,
        staffToken: '',
        members: [],
        earned: [],
        pendingClaims: [],
        endpoints: [],
        referred: new Set(),
        rules: [
          { id: multiplier.rule.id, kind: 'multiplier' },
          { id: capped.rule.id, kind: 'fixed' },
          { id: birthday.rule.id, kind: 'event' },
        ],
      };
      t.staffToken = await this.staffSignIn(t.id, managerEmail);
      this.tenants.push(t);
      for (const types of [['*'], ['points.earned', 'cashback.earned', 'claim.approved', 'referral.completed']])
        await this.createEndpoint(t, types);
      await Promise.all(Array.from({ length: membersPerTenant }, () => this.register(t)));
    }
  }

  /** A manager's staff token (the sandbox answers the code); the first steps are not keyed, so tried again here. */
  private async staffSignIn(tenantId: number, email: string): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const code = await this.call('provision', undefined, 'POST', '/staff/v1/auth/request-code', {
        body: { tenant_id: tenantId, email },
      });
      if (typeof code.data?.code === 'string') {
        const verified = await this.call('provision', undefined, 'POST', '/staff/v1/auth/verify-code', {
          body: { tenant_id: tenantId, email, code: code.data.code },
        });
        if (typeof verified.data?.staff_token === 'string') return verified.data.staff_token;
      }
      if (attempt >= 5) throw new Error(`staff sign-in failed: ${code.status} ${code.code ?? ''}`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }

  /** Start one scenario, unless too many are in flight (then it is counted as shed). */
  launch(maxInFlight: number): void {
    if (this.inFlight >= maxInFlight) {
      this.shed += 1;
      return;
    }
    const scenario = this.rng.weighted(OP_WEIGHTS);
    const tenant = this.rng.pick(this.tenants);
    this.inFlight += 1;
    const p = this.scenario(scenario, tenant)
      .catch(() => undefined)
      .finally(() => {
        this.inFlight -= 1;
        this.pending.delete(p);
      });
    this.pending.add(p);
  }

  /** Wait for the operations in flight, at most `ms`. */
  async settle(ms: number): Promise<void> {
    await Promise.race([Promise.all([...this.pending]), new Promise((r) => setTimeout(r, ms))]);
  }

  private key(kind: string): string {
    return `${kind}-${this.run}-${this.n + 1}-${randomBytes(3).toString('hex')}`;
  }

  private member(t: Tenant, withToken = false): Member | undefined {
    const pool = withToken ? t.members.filter((m) => m.token) : t.members;
    return pool.length ? this.rng.pick(pool) : undefined;
  }

  /**
   * An acknowledged write sent again with its key now and then: the answer must be the first one.
   * A repeat made with a member's token whose member left the pool meanwhile (merged or erased by
   * another worker: the token is revoked, and a 401 is the right answer, since authentication comes
   * before the key is looked at) is not counted as a repeat.
   */
  private async maybeReplay(first: OpRecord, t: Tenant, opts: { member?: Member; bearer?: string }): Promise<void> {
    if (first.outcome !== 'ack' || !first.key || this.rng.next() >= 0.05) return;
    const { member, bearer } = opts;
    const again = await this.call(first.kind, t, first.method, first.path, {
      memberToken: member?.token,
      bearer,
      body: first.body,
      key: first.key,
      claimId: first.claimId,
    });
    const rec = this.byN.get(again.n);
    const memberLeft = member !== undefined && !t.members.includes(member);
    if (rec && !memberLeft) {
      rec.replayOf = first.n;
      rec.replayIdentical = again.status === first.status && again.text === first.text;
    }
  }

  private async scenario(s: Scenario, t: Tenant): Promise<void> {
    switch (s) {
      case 'register':
        return void (await this.register(t));
      case 'signin':
        return this.signIn(t);
      case 'points_earn':
      case 'cashback_earn':
        return this.earn(t, s === 'points_earn' ? 'points' : 'cashback');
      case 'points_redeem':
      case 'cashback_redeem':
        return this.redeem(t, s === 'points_redeem' ? 'points' : 'cashback');
      case 'points_refund':
      case 'cashback_refund':
        return this.refund(t, s === 'points_refund' ? 'points' : 'cashback');
      case 'quote':
        return this.quote(t);
      case 'claim':
        return this.claim(t);
      case 'claim_approve':
      case 'claim_reject':
        return this.decide(t, s === 'claim_approve' ? 'approve' : 'reject');
      case 'referral':
        return this.referral(t);
      case 'adjustment':
        return this.adjust(t);
      case 'member_event':
        return this.memberEvent(t);
      case 'points_transfer':
        return this.transfer(t);
      case 'report':
        return this.report(t);
      case 'tier_read':
        return this.tierRead(t);
      case 'consent':
        return this.consent(t);
      case 'member_merge':
        return this.merge(t);
      case 'member_erase':
        return this.erase(t);
      case 'member_import':
        return this.importMembers(t);
      case 'webhook_create':
        if (t.endpoints.length < 6) await this.createEndpoint(t, this.rng.next() < 0.5 ? ['*'] : this.someTypes());
        return;
      case 'webhook_rotate':
        return this.rotate(t);
      case 'locale':
        return this.locale(t);
      case 'journal_export':
        return this.journalExport(t);
      case 'job_result':
        return this.jobResult(t);
      case 'rule_update':
        return this.ruleUpdate(t);
    }
  }

  /** A member's mail language changes (or goes back to the tenant's): their mail keeps coming. */
  private async locale(t: Tenant): Promise<void> {
    const m = this.member(t);
    if (!m) return;
    const locale = this.rng.pick(['en', 'fr', 'ar', null]);
    await this.call('locale', t, 'PUT', `/api/v1/members/${m.id}/locale`, { body: { locale } });
  }

  /** A finance team's export of a card's journal while the load goes on (streamed, CSV or JSON Lines). */
  private async journalExport(t: Tenant): Promise<void> {
    const card = this.rng.next() < 0.5 ? t.pointsCard : t.cashbackCard;
    const format = this.rng.next() < 0.5 ? 'csv' : 'jsonl';
    await this.call('journal_export', t, 'GET', `/api/v1/exports/journal?card_id=${card}&format=${format}`, {});
  }

  /**
   * The same export as a job (the last minute of a card's journal, JSON Lines): started, followed
   * until it ends, and its result downloaded by the app that started it (which has the scope,
   * programme_manage, that a result needs). The rows downloaded are kept for checkJobResults.
   */
  private async jobResult(t: Tenant): Promise<void> {
    const card = this.rng.next() < 0.5 ? t.pointsCard : t.cashbackCard;
    const from = encodeURIComponent(new Date(Date.now() - 60_000).toISOString());
    const started = await this.call(
      'export_job',
      t,
      'POST',
      `/api/v1/exports/journal?card_id=${card}&format=jsonl&from=${from}`,
    );
    const job = started.data?.job as { id?: unknown } | undefined;
    if (started.outcome !== 'ack' || typeof job?.id !== 'string') return;
    if ((await this.jobStatus(t, job.id)) !== 'succeeded') return;
    const r = await this.call('job_result', t, 'GET', `/api/v1/jobs/${job.id}/result`);
    const rec = this.byN.get(r.n);
    if (r.outcome !== 'ack' || !rec || r.answer === undefined) return;
    rec.rows = r.answer
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        try {
          const o = JSON.parse(l) as Record<string, unknown>;
          return [o.id, o.card_id, o.member_id, o.event, o.amount, o.balance_after].join('|');
        } catch {
          return `not JSON: ${l.slice(0, 80)}`; // no journal row matches it
        }
      });
  }

  /** A job followed until it has ended (or a minute has passed). */
  private async jobStatus(t: Tenant, id: string): Promise<string | undefined> {
    for (let i = 0; i < 60; i++) {
      const r = await this.call('job_read', t, 'GET', `/api/v1/jobs/${id}`);
      const status = (r.data as { status?: string } | undefined)?.status;
      if (status === 'succeeded' || status === 'failed') return status;
      await new Promise((res) => setTimeout(res, 1000));
    }
    return undefined;
  }

  /**
   * A programme manager retunes one of the points card's earning rules while members earn: the
   * multiplier's factor, the capped bonus's points or the birthday rule's points (never a cap or a
   * budget, which checkRuleCaps reads from the current version). An active rule gets a new version
   * per update. A PATCH takes no Idempotency-Key, so it is never repeated; the answer is kept for
   * checkRuleUpdates.
   */
  private async ruleUpdate(t: Tenant): Promise<void> {
    const rule = this.rng.pick(t.rules);
    const body =
      rule.kind === 'multiplier'
        ? { factor: this.rng.pick([2, 3]) }
        : { points: rule.kind === 'fixed' ? this.rng.pick([5, 7, 9]) : this.rng.pick([20, 25, 30]) };
    await this.call('rule_update', t, 'PATCH', `/api/v1/loyalty/cards/${t.pointsCard}/rules/${rule.id}`, {
      body,
      keepText: true,
    });
  }

  /**
   * Each tenant's journal of both cards exported once the load has stopped (JSON Lines): what the
   * check compares, row for row, with the journal.
   */
  async finalExports(): Promise<{ tenantId: number; cardId: number; status: number; rows: unknown[] }[]> {
    const out: { tenantId: number; cardId: number; status: number; rows: unknown[] }[] = [];
    for (const t of this.tenants)
      for (const cardId of [t.pointsCard, t.cashbackCard]) {
        const res = await fetch(`${this.gateways[0]}/api/v1/exports/journal?card_id=${cardId}&format=jsonl`, {
          headers: { 'x-app-id': t.appId, 'x-api-key': t.apiKey },
        });
        const text = await res.text();
        const rows = res.ok
          ? text
              .split('\n')
              .filter((l) => l.trim() !== '')
              .map((l): unknown => JSON.parse(l))
          : [];
        out.push({ tenantId: t.id, cardId, status: res.status, rows });
      }
    return out;
  }

  private async register(t: Tenant): Promise<void> {
    const seq = ++this.memberSeq;
    const email = `m${seq}.${this.run}@soak.example`;
    // Members who accept emails: the earn digests are marketing mail, sent only with that consent.
    const body = { name: `Member ${seq}`, email, phone: `+44${String(7_000_000_000 + seq)}`, accepts_emails: true };
    const key = this.key('register');
    const r = await this.call('register', t, 'POST', '/api/v1/auth/member/register', { body, key });
    await this.maybeReplay(r, t, {});
    const id = r.data?.member;
    if (r.outcome !== 'ack' || typeof id !== 'object' || id === null || !('id' in id)) return;
    const member: Member = { id: Number(id.id), email, otpAt: Date.now(), claimOtps: 0 };
    t.members.push(member);
    const code = r.data?.otp_code;
    if (typeof code === 'string') await this.verify(t, member, code);
  }

  private async verify(t: Tenant, m: Member, code: string): Promise<void> {
    const v = await this.call('verify_otp', t, 'POST', '/api/v1/auth/member/verify-otp', {
      body: { email: m.email, code },
    });
    if (typeof v.data?.member_token === 'string') m.token = v.data.member_token;
  }

  private async signIn(t: Tenant): Promise<void> {
    // Codes have a cooldown: a member who asked less than 70 s ago is not asked again.
    const m = t.members.find((x) => Date.now() - x.otpAt > 70_000 && this.rng.next() < 0.2);
    if (!m) return;
    m.otpAt = Date.now();
    const r = await this.call('request_otp', t, 'POST', '/api/v1/auth/member/request-otp', {
      body: { email: m.email },
    });
    if (typeof r.data?.otp_code === 'string') await this.verify(t, m, r.data.otp_code);
  }

  private async earn(t: Tenant, card: 'points' | 'cashback'): Promise<void> {
    const m = this.member(t);
    if (!m) return;
    const key = this.key(`${card}_earn`);
    const amount = card === 'points' ? this.rng.int(5, 60) : Math.round(this.rng.between(5, 120) * 100) / 100;
    const body = {
      card_id: card === 'points' ? t.pointsCard : t.cashbackCard,
      member_id: m.id,
      purchase_amount: amount,
      reference: key,
    };
    const path = card === 'points' ? '/api/v1/loyalty/points/earn' : '/api/v1/cashback/cashback/earn';
    const r = await this.call(`${card}_earn`, t, 'POST', path, { body, key });
    if (r.outcome === 'ack') t.earned.push({ card, reference: key, memberId: m.id });
    await this.maybeReplay(r, t, {});
  }

  /** A birthday reported for a member: the event rule gives points once per reference, retries included. */
  private async memberEvent(t: Tenant): Promise<void> {
    const m = this.member(t);
    if (!m) return;
    const reference = this.key('member_event');
    const body = { card_id: t.pointsCard, member_id: m.id, event: 'birthday', reference };
    await this.call('member_event', t, 'POST', '/api/v1/loyalty/points/events', { body, reference });
  }

  /** A member gives a few points to another member (their lots move with their dates); 422 when short. */
  private async transfer(t: Tenant): Promise<void> {
    const from = this.member(t, true);
    const to = this.member(t);
    if (!from?.token || !to || to.id === from.id) return;
    const key = this.key('points_transfer');
    const body = {
      card_id: t.pointsCard,
      from_member_id: from.id,
      to_member_id: to.id,
      points: this.rng.int(1, 10),
      reference: key,
    };
    const r = await this.call('points_transfer', t, 'POST', '/api/v1/loyalty/points/transfer', {
      body,
      key,
      memberToken: from.token,
    });
    await this.maybeReplay(r, t, { member: from });
  }

  /** The points card's programme report (rollups kept from the journal's writes). */
  private async report(t: Tenant): Promise<void> {
    await this.call('report', t, 'GET', `/api/v1/loyalty/cards/${t.pointsCard}/report?granularity=day`, {});
  }

  /** A member's tier and progress on the points card. */
  private async tierRead(t: Tenant): Promise<void> {
    const m = this.member(t);
    if (!m) return;
    await this.call('tier_read', t, 'GET', `/api/v1/loyalty/cards/${t.pointsCard}/members/${m.id}/tier`);
  }

  /** A member changes their marketing consent (an SMS one: the earn receipts they are sent do not depend on it). */
  private async consent(t: Tenant): Promise<void> {
    const m = this.member(t);
    if (!m) return;
    await this.call('consent', t, 'PUT', `/api/v1/members/${m.id}/consents`, {
      body: { consents: [{ purpose: 'marketing_sms', granted: this.rng.next() < 0.5 }], source: 'soak' },
    });
  }

  /**
   * Two members found to be one person: the source is merged into the target (a job). The source
   * leaves the workload's pool before the request, whatever its answer: from then on it may be a
   * tombstone. Merges take no Idempotency-Key; a repeat is refused (the source is gone).
   */
  private async merge(t: Tenant): Promise<void> {
    if (t.members.length < 20) return;
    const target = this.member(t);
    const source = this.member(t);
    if (!target || !source || target.id === source.id) return;
    t.members.splice(t.members.indexOf(source), 1);
    await this.call('member_merge', t, 'POST', `/api/v1/members/${target.id}/merge`, {
      body: { source_member_id: source.id },
    });
  }

  /** A member asks to be forgotten (a job in every service); they leave the pool first. */
  private async erase(t: Tenant): Promise<void> {
    if (t.members.length < 20) return;
    const m = this.member(t);
    if (!m) return;
    t.members.splice(t.members.indexOf(m), 1);
    const r = await this.call('member_erase', t, 'POST', `/api/v1/members/${m.id}/erase`, {});
    // Asking again answers the same job.
    if (r.outcome === 'ack' && this.rng.next() < 0.3)
      await this.call('member_erase', t, 'POST', `/api/v1/members/${m.id}/erase`, {});
  }

  /** A small members file moved in: uploaded, validated (a job), executed (a job); now and then sent twice. */
  private async importMembers(t: Tenant): Promise<void> {
    const seq = ++this.memberSeq;
    const ids = [0, 1, 2].map((i) => `X-${this.run}-${seq}-${i}`);
    const rows = ids.map(
      (id, i) => `${id},Imported ${seq} ${i},${id.toLowerCase()}@import.soak.example,2024-01-0${i + 1},true`,
    );
    const file = `external_id,name,email,joined_at,accepts_emails\n${rows.join('\n')}\n`;
    const times = this.rng.next() < 0.3 ? 2 : 1;
    for (let n = 0; n < times; n++) {
      const created = await this.call('import_create', t, 'POST', '/api/v1/imports?kind=members', {
        record: { external_ids: ids },
        raw: { type: 'text/csv', text: file },
      });
      const imp = created.data as { id?: string } | undefined;
      if (created.outcome !== 'ack' || typeof imp?.id !== 'string') return;
      const status = await this.importStatus(t, imp.id, ['validated', 'invalid', 'failed']);
      if (status !== 'validated') return;
      await this.call('import_execute', t, 'POST', `/api/v1/imports/${imp.id}/execute`, {
        record: { external_ids: ids },
      });
    }
  }

  private async importStatus(t: Tenant, id: string, until: string[]): Promise<string | undefined> {
    for (let i = 0; i < 60; i++) {
      const r = await this.call('import_read', t, 'GET', `/api/v1/imports/${id}`);
      const status = (r.data as { status?: string } | undefined)?.status;
      if (status && until.includes(status)) return status;
      await new Promise((res) => setTimeout(res, 1000));
    }
    return undefined;
  }

  private async redeem(t: Tenant, card: 'points' | 'cashback'): Promise<void> {
    const m = this.member(t, true);
    if (!m?.token) return;
    const key = this.key(`${card}_redeem`);
    const body =
      card === 'points'
        ? { card_id: t.pointsCard, reward_id: t.reward, reference: key }
        : { card_id: t.cashbackCard, amount: Math.round(this.rng.between(0.5, 4) * 100) / 100, reference: key };
    const path = card === 'points' ? '/api/v1/loyalty/points/redeem' : '/api/v1/cashback/cashback/redeem';
    const r = await this.call(`${card}_redeem`, t, 'POST', path, { body, key, memberToken: m.token });
    await this.maybeReplay(r, t, { member: m });
  }

  private async refund(t: Tenant, card: 'points' | 'cashback'): Promise<void> {
    const earned = t.earned.filter((e) => e.card === card);
    if (earned.length === 0) return;
    const e = this.rng.pick(earned);
    const key = this.key(`${card}_refund`);
    const amount = card === 'points' ? this.rng.int(1, 10) : Math.round(this.rng.between(1, 10) * 100) / 100;
    const body = {
      card_id: card === 'points' ? t.pointsCard : t.cashbackCard,
      member_id: e.memberId,
      refund_amount: amount,
      reference: e.reference,
    };
    const path = card === 'points' ? '/api/v1/loyalty/points/refund' : '/api/v1/cashback/cashback/refund';
    const r = await this.call(`${card}_refund`, t, 'POST', path, { body, key });
    await this.maybeReplay(r, t, {});
  }

  private async quote(t: Tenant): Promise<void> {
    const m = this.member(t);
    if (!m) return;
    const points = this.rng.next() < 0.5;
    await this.call('quote', t, 'POST', points ? '/api/v1/loyalty/points/quote' : '/api/v1/cashback/cashback/quote', {
      body: {
        operation: 'earn',
        card_id: points ? t.pointsCard : t.cashbackCard,
        member_id: m.id,
        purchase_amount: 20,
      },
    });
  }

  private async claim(t: Tenant): Promise<void> {
    // Claim codes are limited per member and hour: a member asks for a few at most.
    const m = t.members.find((x) => x.claimOtps < 3 && this.rng.next() < 0.1);
    if (!m) return;
    m.claimOtps += 1;
    const otp = await this.call('claim_otp', t, 'POST', '/api/v1/loyalty/claims/request-otp', {
      body: { member_email: m.email, card_id: t.pointsCard, reward_id: t.reward },
    });
    if (typeof otp.data?.otp_code !== 'string') return;
    const key = this.key('claim_create');
    const r = await this.call('claim_create', t, 'POST', '/api/v1/loyalty/claims', {
      key,
      body: {
        member_email: m.email,
        card_id: t.pointsCard,
        reward_id: t.reward,
        verification_code: otp.data.otp_code,
        member_note: key,
      },
    });
    const created = r.data?.claim_request;
    if (r.outcome === 'ack' && typeof created === 'object' && created !== null && 'id' in created)
      t.pendingClaims.push({ id: Number(created.id), at: Date.now() });
    await this.maybeReplay(r, t, {});
  }

  private async decide(t: Tenant, decision: 'approve' | 'reject'): Promise<void> {
    // Some claims are never decided (left pending, as a real queue has them).
    const i = t.pendingClaims.findIndex((c) => Date.now() - c.at > 2000 && c.id % 5 !== 0);
    if (i < 0) return;
    const [c] = t.pendingClaims.splice(i, 1);
    const key = this.key(`claim_${decision}`);
    const r = await this.call(`claim_${decision}`, t, 'POST', `/api/v1/loyalty/claims/${c!.id}/${decision}`, {
      key,
      body: { staff_note: `soak ${decision}` },
      claimId: c!.id,
    });
    await this.maybeReplay(r, t, {});
  }

  private async referral(t: Tenant): Promise<void> {
    const referrer = this.member(t);
    if (!referrer) return;
    // Mostly a member not referred yet; now and then one who was (refused: already applied).
    const fresh = t.members.filter((m) => !t.referred.has(m.id) && m.id !== referrer.id);
    const again = [...t.referred].filter((id) => id !== referrer.id);
    const refereeId =
      this.rng.next() < 0.1 && again.length ? this.rng.pick(again) : fresh.length ? this.rng.pick(fresh).id : undefined;
    if (refereeId === undefined) return;
    const code = await this.call(
      'referral_code',
      t,
      'GET',
      `/api/v1/loyalty/cards/${t.pointsCard}/members/${referrer.id}/referral-code`,
    );
    if (typeof code.data?.referral_code !== 'string') return;
    t.referred.add(refereeId);
    const key = this.key('referral_apply');
    const r = await this.call('referral_apply', t, 'POST', '/api/v1/loyalty/referrals/apply', {
      key,
      body: { referral_code: code.data.referral_code, card_id: t.pointsCard, referee_member_id: refereeId },
    });
    await this.maybeReplay(r, t, {});
  }

  private async adjust(t: Tenant): Promise<void> {
    const m = this.member(t);
    if (!m) return;
    const key = this.key('adjustment');
    const r = await this.call('adjustment', t, 'POST', '/staff/v1/adjustments', {
      key,
      bearer: t.staffToken,
      body: {
        card_id: t.pointsCard,
        member_id: m.id,
        direction: this.rng.next() < 0.7 ? 'add' : 'deduct',
        points: this.rng.int(1, 20),
        reason: `soak ${key}`,
      },
    });
    await this.maybeReplay(r, t, { bearer: t.staffToken });
  }

  private someTypes(): string[] {
    return webhookEventNames.filter(() => this.rng.next() < 0.4).slice(0, 6);
  }

  private async createEndpoint(t: Tenant, eventTypes: string[]): Promise<void> {
    const key = this.key('webhook_create');
    const url = this.hookUrl(`/hook/${t.id}/${key}`);
    const r = await this.call('webhook_create', t, 'POST', '/api/v1/webhooks/endpoints', {
      key,
      body: { url, event_types: eventTypes.length ? eventTypes : ['*'], description: key },
    });
    const e = r.data?.endpoint;
    if (r.outcome === 'ack' && typeof e === 'object' && e !== null && 'id' in e)
      t.endpoints.push({ id: Number(e.id), url });
  }

  private async rotate(t: Tenant): Promise<void> {
    if (t.endpoints.length === 0) return;
    const e = this.rng.pick(t.endpoints);
    const key = this.key('webhook_rotate');
    const r = await this.call('webhook_rotate', t, 'POST', `/api/v1/webhooks/endpoints/${e.id}/rotate-secret`, { key });
    await this.maybeReplay(r, t, {});
  }
}
