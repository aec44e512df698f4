// The API flows `npm run test:containers` runs through the containerized gateway: provisioning
// through the operator API, then register, verify, earn, redeem, claim, approve, referral; and a
// burst of earns, each under its own Idempotency-Key, retried with the same key until it succeeds.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

const ALL_SCOPES = ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read'];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function client(baseUrl, operatorToken) {
  async function call(method, path, { body, headers = {} } = {}) {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = { success: false, error: { code: 'not_json', message: text.slice(0, 200) } };
    }
    return { status: res.status, json, headers: res.headers };
  }
  /** A call that must succeed; returns data. */
  async function ok(method, path, opts) {
    const r = await call(method, path, opts);
    if (r.status >= 300 || r.json.success === false)
      throw new Error(`${method} ${path} → ${r.status} ${JSON.stringify(r.json.error ?? r.json).slice(0, 400)}`);
    return r.json.data;
  }
  const admin = (method, path, body) =>
    ok(method, `/admin/v1${path}`, { body, headers: { authorization: `Bearer ${operatorToken}` } });
  return { call, ok, admin };
}

/**
 * Provision a sandbox tenant (responses carry one-time codes), then walk the member journey.
 * Returns what the burst needs and the list of steps done.
 */
export async function smokeFlow(baseUrl, operatorToken, log = console.log) {
  const { ok, admin } = client(baseUrl, operatorToken);
  const run = randomUUID().slice(0, 8);
  const steps = [];
  const step = async (name, fn) => {
    const started = performance.now();
    const out = await fn();
    steps.push({ name, ms: Math.round(performance.now() - started) });
    log(`  ✓ ${name}`);
    return out;
  };

  const { tenant } = await step('operator: sandbox tenant', () =>
    admin('POST', '/tenants', { name: `Containers ${run}`, sandbox: true }),
  );
  const { app } = await step('operator: app with all scopes', () =>
    admin('POST', `/tenants/${tenant.id}/apps`, { name: `smoke ${run}`, scopes: ALL_SCOPES }),
  );
  const { card: cashback } = await step('operator: cashback card', () =>
    admin('POST', `/tenants/${tenant.id}/cards`, {
      unique_identifier: `cashback-${run}`,
      name: 'Smoke cashback',
      description: '10% back from 1.00, at most 50.00',
      reward_system: 'cashback',
      cashback_config: {
        cashback_percentage: 10,
        cashback_min_amount: 1,
        cashback_max_amount: 50,
        allows_pin_redemption: false,
      },
    }),
  );
  const { card: points } = await step('operator: points card with referral bonuses', () =>
    admin('POST', `/tenants/${tenant.id}/cards`, {
      unique_identifier: `points-${run}`,
      name: 'Smoke points',
      description: 'one point per unit; referrals 100 / 50',
      reward_system: 'points',
      points_ratio: 1,
      referrer_bonus: 100,
      referee_bonus: 50,
    }),
  );
  const { reward } = await step('operator: reward', () =>
    admin('POST', `/tenants/${tenant.id}/cards/${points.id}/rewards`, { name: 'Free coffee', points_cost: 100 }),
  );

  const appHeaders = { 'x-app-id': app.app_id, 'x-api-key': app.api_key };
  const api = (method, path, body, headers = {}) =>
    ok(method, `/api/v1/${path}`, { body, headers: { ...appHeaders, ...headers } });

  const email = `ana-${run}@example.com`;
  const registered = await step('member: register', () =>
    api('POST', 'auth/member/register', { name: 'Ana Silva', email, phone: '+351912345678' }),
  );
  const ana = registered.member.id;
  if (!registered.otp_code) throw new Error('a sandbox registration returned no otp_code');
  const { member_token: token } = await step('member: verify one-time code', () =>
    api('POST', 'auth/member/verify-otp', { email, code: registered.otp_code }),
  );
  const memberHeaders = { 'x-member-token': token };

  await step('cashback: earn 42.50 → 4.25', () =>
    api(
      'POST',
      'cashback/cashback/earn',
      { card_id: cashback.id, member_id: ana, purchase_amount: 42.5, reference: `order-${run}` },
      { 'idempotency-key': `order-${run}` },
    ),
  );
  await step('cashback: redeem 2.00', () =>
    api('POST', 'cashback/cashback/redeem', { card_id: cashback.id, amount: 2 }, memberHeaders),
  );
  const cb = await step('cashback: balance is 2.25', () =>
    api('GET', `cashback/cashback/balance?card_id=${cashback.id}&member_id=${ana}`),
  );
  expectEqual(cb.cashback_balance, 2.25, 'cashback balance');

  await step('points: earn 480', () =>
    api('POST', 'loyalty/points/earn', { card_id: points.id, email, purchase_amount: 480, reference: `till-${run}` }),
  );
  await step('points: redeem a reward (100)', () =>
    api('POST', 'loyalty/points/redeem', { card_id: points.id, reward_id: reward.id }, memberHeaders),
  );

  const claimCode = await step('claim: request a code', () =>
    api('POST', 'loyalty/claims/request-otp', { member_email: email, card_id: points.id, reward_id: reward.id }),
  );
  const claim = await step('claim: create', () =>
    api('POST', 'loyalty/claims', {
      member_email: email,
      card_id: points.id,
      reward_id: reward.id,
      verification_code: claimCode.otp_code,
      member_note: 'Oat milk',
    }),
  );
  await step('claim: approve (deducts 100)', () =>
    api('POST', `loyalty/claims/${claim.claim_request.id}/approve`, { staff_note: 'Enjoy' }),
  );

  const { referral_code: code } = await step('referral: code of the referrer', () =>
    api('GET', `loyalty/cards/${points.id}/members/${ana}/referral-code`),
  );
  const bo = await step('referral: register the referee', () =>
    api('POST', 'auth/member/register', { name: 'Bo Novo', email: `bo-${run}@example.com`, phone: '+351912345679' }),
  );
  await step('referral: apply', () =>
    api(
      'POST',
      'loyalty/referrals/apply',
      { referral_code: code, card_id: points.id, referee_member_id: bo.member.id },
      { 'idempotency-key': `ref-${run}` },
    ),
  );
  // 480 − 100 (redeem) − 100 (claim) + 100 (referrer bonus); the referee has 50.
  await step('points: balances 380 (referrer) and 50 (referee)', async () => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const a = await api('GET', `loyalty/points/balance?card_id=${points.id}&member_id=${ana}`);
      const b = await api('GET', `loyalty/points/balance?card_id=${points.id}&member_id=${bo.member.id}`);
      if (a.points_balance === 380 && b.points_balance === 50) return;
      if (Date.now() > deadline) throw new Error(`balances ${a.points_balance} / ${b.points_balance}, wanted 380 / 50`);
      await sleep(250);
    }
  });
  return { run, tenant, app, points, member: ana, email, steps, appHeaders };
}

function expectEqual(actual, wanted, what) {
  if (actual !== wanted) throw new Error(`${what}: ${JSON.stringify(actual)}, wanted ${JSON.stringify(wanted)}`);
}

/**
 * `count` points earns on one member, `concurrency` at a time, each with its own Idempotency-Key
 * and reference. `onProgress(done)` runs after each first success (the caller kills the ledger on
 * it). A failed earn (5xx, 409 idempotency_in_progress, 429, network error) is retried with the
 * same key and body until it succeeds, or until no earn at all has succeeded for `stallMs`: the
 * burst fails on a system that stopped making progress, not on one that is slow to recover (a
 * fixed deadline for the whole burst failed on a loaded machine while the ledger was restarting).
 */
export async function earnBurst(baseUrl, ctx, { count, concurrency, stallMs, onProgress }) {
  const { call } = client(baseUrl, '');
  const prefix = `burst-${ctx.run}`;
  const stats = { sent: 0, attempts: 0, retried: 0, failures: {}, expectedPoints: 0, maxAttempts: 0 };
  let lastSuccess = Date.now();
  let next = 0;
  let done = 0;
  const one = async (i) => {
    const key = `${prefix}-${i}`;
    const amount = 10 + (i % 7);
    stats.expectedPoints += amount; // points_ratio 1
    for (let attempt = 1; ; attempt++) {
      stats.attempts += 1;
      stats.maxAttempts = Math.max(stats.maxAttempts, attempt);
      if (attempt === 2) stats.retried += 1;
      let outcome;
      try {
        const r = await call('POST', '/api/v1/loyalty/points/earn', {
          body: { card_id: ctx.points.id, member_id: ctx.member, purchase_amount: amount, reference: key },
          headers: { ...ctx.appHeaders, 'idempotency-key': key },
        });
        if (r.status < 300 && r.json.success !== false) {
          lastSuccess = Date.now();
          return;
        }
        outcome = `${r.status} ${r.json.error?.code ?? ''}`.trim();
        if (r.status < 500 && ![409, 429].includes(r.status))
          throw new Error(`earn ${key} refused: ${outcome} ${JSON.stringify(r.json.error)}`);
      } catch (err) {
        if (String(err.message).startsWith(`earn ${key} refused`)) throw err;
        outcome = err.cause?.code ?? err.name ?? 'error';
      }
      stats.failures[outcome] = (stats.failures[outcome] ?? 0) + 1;
      if (Date.now() - lastSuccess > stallMs)
        throw new Error(
          `earn ${key} still failing (${outcome}) after ${attempt} attempts; no earn succeeded for ${Math.round(stallMs / 1000)} s`,
        );
      await sleep(Math.min(1000, 100 * attempt));
    }
  };
  const worker = async () => {
    while (next < count) {
      const i = next++;
      stats.sent += 1;
      await one(i);
      done += 1;
      onProgress?.(done);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  stats.ms = Math.round(performance.now() - started);
  stats.prefix = prefix;
  return stats;
}
