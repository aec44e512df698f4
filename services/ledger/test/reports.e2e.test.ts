import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '@loyalty/runtime';
import type { LedgerHooks } from '../src/service.ts';
import { apiClient, OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { checkResponse } from '../../../test/support/contract.ts';
import { email, pointsCard, reward, signedIn, type Api } from './support.ts';

/**
 * Programme reports end to end: random earns, refunds, redemptions, adjustments and expiries over
 * weeks of a card in a non-UTC time zone; every figure of the report (per day, week and month, and
 * the totals, outstanding balance, liability, active members and top rewards) equals what the
 * journal gives when summed directly; the rollups survive a rebuild unchanged.
 */
let sys: TestSystem;
let api: Api;
let tenantId: number;
const ALL = ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read', 'programme_manage'];
const ISSUED = ['cashback_earned', 'staff_added_points', 'referral_bonus', 'event_bonus'];
const REDEEMED = ['cashback_redeemed', 'staff_redeemed_reward', 'reward_claimed'];
// Staff adjustments (adjusted) have the staff API; this test writes through the merchant API only.

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  const t = await sys.tenant({ scopes: ALL });
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
});
afterAll(async () => {
  await sys?.stop();
});

/** A small deterministic generator (the seed is printed when a figure differs). */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const ledgerHooks = () => (sys.services.ledger as RunningService<LedgerHooks>).hooks;

/** The journal summed directly, by the card's local day. */
async function fromJournal(cardId: number, from: string, to: string, trunc: string) {
  const { rows } = await sys.db.query<{
    period: string;
    issued: string;
    redeemed: string;
    expired: string;
    refunded: string;
    adjusted: string;
    active: string;
  }>(
    `SELECT to_char(date_trunc($4, (j.created_at AT TIME ZONE c.time_zone)::date), 'YYYY-MM-DD') AS period,
            coalesce(sum(j.amount) FILTER (WHERE j.event = ANY($5)), 0)::text AS issued,
            coalesce(-sum(j.amount) FILTER (WHERE j.event = ANY($6)), 0)::text AS redeemed,
            coalesce(-sum(j.amount) FILTER (WHERE j.event IN ('points_expired', 'cashback_expired')), 0)::text AS expired,
            coalesce(-sum(j.amount) FILTER (WHERE j.event IN ('points_refunded', 'cashback_refunded')), 0)::text AS refunded,
            coalesce(sum(j.amount) FILTER (WHERE j.event = 'staff_adjustment'), 0)::text AS adjusted,
            count(DISTINCT j.member_id) FILTER (WHERE NOT (j.event = 'staff_adjustment' AND j.metadata ? 'import'))::text AS active
       FROM ledger.journal j JOIN ledger.cards c ON c.id = j.card_id
      WHERE j.card_id = $1 AND (j.created_at AT TIME ZONE c.time_zone)::date BETWEEN $2 AND $3
      GROUP BY 1`,
    [cardId, from, to, trunc, ISSUED, REDEEMED],
  );
  return new Map(rows.map((r) => [r.period, r]));
}

type Figures = {
  start: string;
  issued: number;
  redeemed: number;
  expired: number;
  refunded: number;
  adjusted: number;
  active_members: number;
};

describe('programme report', () => {
  it('equals the sums of the journal on random activity, at every granularity', async () => {
    const seed = Date.now() % 100_000;
    const rnd = random(seed);
    sys.clock.advance(Date.parse('2031-03-02T12:00:00Z') - sys.clock.now().getTime());
    const card = await pointsCard(sys, tenantId, { time_zone: 'America/New_York', expiry_days: 5, point_value: 0.015 });
    const cheap = await reward(sys, tenantId, card, 10);
    const dear = await reward(sys, tenantId, card, 25);
    const members = await Promise.all([signedIn(api), signedIn(api), signedIn(api)]);
    const walkIns = [email('r1'), email('r2')];
    let ref = 0;
    for (let day = 0; day < 20; day++) {
      for (let k = 0; k < 4; k++) {
        const m = members[Math.floor(rnd() * members.length)]!;
        const roll = rnd();
        if (roll < 0.5) {
          ref += 1;
          const who = rnd() < 0.7 ? { member_id: m.id } : { email: walkIns[Math.floor(rnd() * 2)] };
          const r = await api('POST', '/api/v1/loyalty/points/earn', {
            body: { card_id: card, ...who, purchase_amount: 5 + Math.floor(rnd() * 60), reference: `r${seed}-${ref}` },
          });
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          if (rnd() < 0.3) {
            const back = await api('POST', '/api/v1/loyalty/points/refund', {
              body: { card_id: card, ...who, refund_amount: 3, reference: `r${seed}-${ref}` },
            });
            expect(back.status, JSON.stringify(back.body)).toBe(200);
          }
        } else if (roll < 0.8) {
          const redeem = () =>
            api('POST', '/api/v1/loyalty/points/redeem', {
              token: m.token,
              body: { card_id: card, reward_id: rnd() < 0.6 ? cheap : dear },
            });
          let r = await redeem();
          if (r.status === 401) {
            // The member's session ran out as the clock moved on: a new code, a new token.
            const otp = await api('POST', '/api/v1/auth/member/request-otp', { body: { email: m.email } });
            const v = await api('POST', '/api/v1/auth/member/verify-otp', {
              body: { email: m.email, code: otp.body.data!.otp_code },
            });
            m.token = v.body.data!.member_token as string;
            r = await redeem();
          }
          expect([200, 422]).toContain(r.status);
        }
        // Hours apart, so that local days and UTC days differ for some rows.
        sys.clock.advance(Math.floor(rnd() * 6 * 3600_000));
      }
      await ledgerHooks().sweepLots();
    }
    // Some deltas folded, some not: the report adds both.
    await ledgerHooks().foldReports();
    await api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: card, member_id: members[0]!.id, purchase_amount: 11, reference: `r${seed}-last` },
    });

    const from = '2031-03-01';
    const to = '2031-04-15';
    for (const g of ['day', 'week', 'month'] as const) {
      const r = await api('GET', `/api/v1/loyalty/cards/${card}/report?from=${from}&to=${to}&granularity=${g}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const report = r.body.data as {
        periods: Figures[];
        totals: Record<string, number | null>;
        outstanding: Record<string, number | null>;
        top_rewards: { reward_id: number; redemptions: number; amount: number }[];
      };
      const expected = await fromJournal(card, from, to, g);
      let nonEmpty = 0;
      for (const p of report.periods) {
        const e = expected.get(p.start);
        const want = e
          ? {
              issued: Number(e.issued),
              redeemed: Number(e.redeemed),
              expired: Number(e.expired),
              refunded: Number(e.refunded),
              adjusted: Number(e.adjusted),
              active_members: Number(e.active),
            }
          : { issued: 0, redeemed: 0, expired: 0, refunded: 0, adjusted: 0, active_members: 0 };
        if (e) nonEmpty += 1;
        expect({ ...p, start: undefined }, `seed ${seed}, ${g} ${p.start}`).toEqual({ ...want, start: undefined });
      }
      expect(nonEmpty).toBe(expected.size);
      const { rows: t } = await sys.db.query<{
        issued: string;
        redeemed: string;
        expired: string;
        active: string;
        balance: string;
      }>(
        `SELECT coalesce(sum(j.amount) FILTER (WHERE j.event = ANY($2) AND (j.created_at AT TIME ZONE c.time_zone)::date BETWEEN $3 AND $4), 0)::text AS issued,
                coalesce(-sum(j.amount) FILTER (WHERE j.event = ANY($5) AND (j.created_at AT TIME ZONE c.time_zone)::date BETWEEN $3 AND $4), 0)::text AS redeemed,
                coalesce(-sum(j.amount) FILTER (WHERE j.event LIKE '%expired' AND (j.created_at AT TIME ZONE c.time_zone)::date BETWEEN $3 AND $4), 0)::text AS expired,
                count(DISTINCT j.member_id) FILTER (WHERE (j.created_at AT TIME ZONE c.time_zone)::date BETWEEN $3 AND $4)::text AS active,
                coalesce(sum(j.amount) FILTER (WHERE (j.created_at AT TIME ZONE c.time_zone)::date <= $4), 0)::text AS balance
           FROM ledger.journal j JOIN ledger.cards c ON c.id = j.card_id WHERE j.card_id = $1`,
        [card, ISSUED, from, to, REDEEMED],
      );
      const s = t[0]!;
      expect(report.totals.issued).toBe(Number(s.issued));
      expect(report.totals.active_members).toBe(Number(s.active));
      expect(report.totals.breakage).toBeCloseTo(Number(s.expired) / Number(s.issued), 5);
      expect(report.totals.redemption_rate).toBeCloseTo(Number(s.redeemed) / Number(s.issued), 5);
      expect(report.outstanding.balance).toBe(Number(s.balance));
      expect(report.outstanding.liability).toBeCloseTo(Math.round(Number(s.balance) * 1.5) / 100, 2);
      const { rows: accounts } = await sys.db.query<{ total: string }>(
        'SELECT coalesce(sum(balance + pending + held), 0)::text AS total FROM ledger.accounts WHERE card_id = $1',
        [card],
      );
      expect(report.outstanding.balance).toBe(Number(accounts[0]!.total));
      const redeemedTop = report.top_rewards.reduce((n, x) => n + x.amount, 0);
      expect(redeemedTop).toBe(Number(s.redeemed));
    }
    expect(Number((await fromJournal(card, from, to, 'month')).size)).toBeGreaterThan(0);
  });

  it('rebuilds to the same figures, and refuses bad input', async () => {
    const card = await pointsCard(sys, tenantId, { time_zone: 'Asia/Kolkata' });
    for (let i = 0; i < 5; i++) {
      await api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: card, email: email('rb'), purchase_amount: 10 + i },
      });
      sys.clock.advance(7 * 3600_000);
    }
    const path = `/api/v1/loyalty/cards/${card}/report?from=2031-01-01&to=2032-12-31&granularity=month`;
    const before = (await api('GET', path)).body.data;
    const { job } = await sys.admin<{ job: { id: string } }>('POST', `/admin/v1/tenants/${tenantId}/reports/rebuild`, {
      card_id: card,
    });
    let status = '';
    for (let i = 0; i < 100 && status !== 'succeeded'; i++) {
      status = (await sys.admin<{ status: string }>('GET', `/admin/v1/jobs/${job.id}`)).status;
      if (status !== 'succeeded') await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe('succeeded');
    expect((await api('GET', path)).body.data).toEqual(before);
    expect((before as { totals: { issued: number } }).totals.issued).toBe(10 + 11 + 12 + 13 + 14);

    const bad = async (q: string, status: number, code: string) => {
      const r = await api('GET', `/api/v1/loyalty/cards/${card}/report?${q}`);
      expect(r.status, q).toBe(status);
      expect(r.body.error?.code, q).toBe(code);
    };
    await bad('from=2031-02-30', 400, 'validation_error');
    await bad('from=2031-05-01&to=2031-04-01', 400, 'validation_error');
    await bad('granularity=year', 400, 'validation_error');
    await bad('from=1990-01-01&to=2031-01-01', 400, 'validation_error');
    const missing = await api('GET', `/api/v1/loyalty/cards/999999/report`);
    expect(missing.status).toBe(404);
    const other = apiClient(sys.url, await sys.tenant({ scopes: ALL }));
    expect((await other('GET', `/api/v1/loyalty/cards/${card}/report`)).status).toBe(404);
    const noScope = apiClient(sys.url, await sys.tenant({ scopes: ['points_read'] }));
    expect((await noScope('GET', `/api/v1/loyalty/cards/${card}/report`)).status).toBe(403);
  });

  it('refuses a rebuild for a tenant that does not exist with 404 tenant_not_found, and queues no job', async () => {
    // A mistyped tenant id queued a job that succeeded doing nothing.
    const { rows: before } = await sys.db.query(`SELECT count(*)::int AS n FROM ledger.jobs WHERE tenant_id = 999999`);
    const path = '/admin/v1/tenants/999999/reports/rebuild';
    const r = await fetch(`${sys.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'Content-Type': 'application/json' },
      body: '{}',
    });
    const body = (await r.json()) as { error?: { code: string } };
    checkResponse('POST', path, r.status, body);
    expect(r.status).toBe(404);
    expect(body.error?.code).toBe('tenant_not_found');
    const { rows: after } = await sys.db.query(`SELECT count(*)::int AS n FROM ledger.jobs WHERE tenant_id = 999999`);
    expect(after).toEqual(before);
  });
  it('takes the days of years 0001 to 9999 as they are, as exports do (JavaScript reads years 0 to 99 as 19xx)', async () => {
    const card = await pointsCard(sys, tenantId);
    const report = async (q: string) => {
      const r = await api('GET', `/api/v1/loyalty/cards/${card}/report?${q}`);
      expect(r.status, `${q}: ${JSON.stringify(r.body)}`).toBe(200);
      const data = r.body.data as { from: string; to: string; periods: { start: string; issued: number }[] };
      return { from: data.from, to: data.to, starts: data.periods.map((p) => p.start) };
    };
    expect(await report('from=0050-01-01&to=0050-03-31&granularity=month')).toEqual({
      from: '0050-01-01',
      to: '0050-03-31',
      starts: ['0050-01-01', '0050-02-01', '0050-03-01'],
    });
    expect(await report('from=0099-12-01&to=0100-01-31&granularity=month')).toEqual({
      from: '0099-12-01',
      to: '0100-01-31',
      starts: ['0099-12-01', '0100-01-01'],
    });
    // A default `from` (29 days before `to`) in year 0099: its month started in 1999, so no period at all.
    expect(await report('to=0100-01-20&granularity=month')).toEqual({
      from: '0099-12-22',
      to: '0100-01-20',
      starts: ['0099-12-01', '0100-01-01'],
    });
    // 0001-01-01 was a Monday; the default `from` (29 days before `to`) starts no earlier than it.
    expect(await report('from=0001-01-01&to=0001-01-14&granularity=week')).toEqual({
      from: '0001-01-01',
      to: '0001-01-14',
      starts: ['0001-01-01', '0001-01-08'],
    });
    const first = await report('to=0001-01-03');
    expect(first).toEqual({ from: '0001-01-01', to: '0001-01-03', starts: ['0001-01-01', '0001-01-02', '0001-01-03'] });
    expect((await report('to=0012-02-29&granularity=day')).starts).toHaveLength(30);
    expect(await report('from=9999-12-01&to=9999-12-31&granularity=month')).toEqual({
      from: '9999-12-01',
      to: '9999-12-31',
      starts: ['9999-12-01'],
    });
    // What the calendar does not have is refused, naming why.
    for (const [q, message] of [
      ['from=0000-12-31&to=0001-01-31', 'has year 0000: years run from 0001 to 9999'],
      ['from=0050-02-29&to=0050-03-31', 'has day 29 of February 0050, which has 28 days'],
    ]) {
      const r = await api('GET', `/api/v1/loyalty/cards/${card}/report?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'validation_error', fields: [{ field: 'from', message }] });
    }
  });

  it('counts active members across a year end and in periods the range covers in part, folded or not', async () => {
    sys.clock.advance(Date.parse('2032-12-30T12:00:00Z') - sys.clock.now().getTime());
    const card = await pointsCard(sys, tenantId, { time_zone: 'Europe/Paris' });
    const [a, b, c] = [email('ya'), email('yb'), email('yc')];
    const earn = (who: string) =>
      api('POST', '/api/v1/loyalty/points/earn', { body: { card_id: card, email: who, purchase_amount: 10 } });
    // Dec 30 a, Dec 31 a and b (folded); Jan 1 a, Jan 2 c (not folded yet when first read).
    await earn(a);
    sys.clock.advance(24 * 3600_000);
    await earn(a);
    await earn(b);
    await ledgerHooks().foldReports();
    sys.clock.advance(24 * 3600_000);
    await earn(a);
    sys.clock.advance(24 * 3600_000);
    await earn(c);
    const check = async (when: string) => {
      for (const [from, to] of [
        ['2032-12-29', '2033-01-02'],
        ['2032-12-31', '2033-01-01'],
        ['2032-12-01', '2033-01-31'],
      ] as const)
        for (const g of ['day', 'week', 'month'] as const) {
          const r = await api('GET', `/api/v1/loyalty/cards/${card}/report?from=${from}&to=${to}&granularity=${g}`);
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          const report = r.body.data as { periods: Figures[]; totals: { active_members: number } };
          const expected = await fromJournal(card, from, to, g);
          for (const p of report.periods)
            expect(p.active_members, `${when} ${from}..${to} ${g} ${p.start}`).toBe(
              Number(expected.get(p.start)?.active ?? 0),
            );
          const { rows } = await sys.db.query<{ n: string }>(
            `SELECT count(DISTINCT j.member_id)::text AS n FROM ledger.journal j JOIN ledger.cards c ON c.id = j.card_id
              WHERE j.card_id = $1 AND (j.created_at AT TIME ZONE c.time_zone)::date BETWEEN $2 AND $3
                AND NOT (j.event = 'staff_adjustment' AND j.metadata ? 'import')`,
            [card, from, to],
          );
          expect(report.totals.active_members, `${when} ${from}..${to} ${g}`).toBe(Number(rows[0]!.n));
        }
    };
    await check('partly folded');
    await ledgerHooks().foldReports();
    await check('folded');
    const { job } = await sys.admin<{ job: { id: string } }>('POST', `/admin/v1/tenants/${tenantId}/reports/rebuild`, {
      card_id: card,
    });
    let status = '';
    for (let i = 0; i < 100 && status !== 'succeeded'; i++) {
      status = (await sys.admin<{ status: string }>('GET', `/admin/v1/jobs/${job.id}`)).status;
      if (status !== 'succeeded') await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe('succeeded');
    await check('rebuilt');
    // The rollups of the members active in each day, week and month hold what report_active holds.
    const { rows: drift } = await sys.db.query(
      `(SELECT period, start, members FROM ledger.report_active_counts WHERE card_id = $1
        EXCEPT
        SELECT g, date_trunc(g, day::timestamp)::date, count(DISTINCT member_id)
          FROM ledger.report_active, unnest(ARRAY['day', 'week', 'month']) g WHERE card_id = $1 GROUP BY 1, 2)
       UNION ALL
       (SELECT g, date_trunc(g, day::timestamp)::date, count(DISTINCT member_id)
          FROM ledger.report_active, unnest(ARRAY['day', 'week', 'month']) g WHERE card_id = $1 GROUP BY 1, 2
        EXCEPT
        SELECT period, start, members FROM ledger.report_active_counts WHERE card_id = $1)`,
      [card],
    );
    expect(drift).toEqual([]);
  });
});
