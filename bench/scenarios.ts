// What each scenario sends through the gateway. Every request of an earn goes to the next member
// of the pool (distinct accounts), reads pick members the same way, the history read asks for the
// first page of the member with the long history, and redemption hammers a few accounts until
// their balance runs out (then 422 insufficient_balance is the expected answer).
import type { HttpRequestSpec } from './load.ts';
import type { ScenarioName } from './options.ts';
import type { Fixture, Redeemer } from './provision.ts';
import { REDEEM_AMOUNT_CENTS, RULES_PURCHASE } from './provision.ts';
import type { Api } from './api.ts';

export const DESCRIPTIONS: Record<ScenarioName, string> = {
  points_earn: 'POST points/earn, each request for the next of the provisioned members',
  points_earn_rules:
    'POST points/earn of a 20-line purchase on a card with 25 active earning rules (no caps), for the next member',
  points_earn_tiers:
    'POST points/earn on a card with three tiers and five rules on the tier (the member already holds one), for the next member',
  cashback_earn: 'POST cashback/earn, each request for the next member',
  points_balance: 'GET points/balance of the next member',
  points_history: 'GET points/history, first page (20) of a member with the long history',
  cashback_redeem:
    'POST cashback/redeem of 0.10 with a member token, concentrated on a few accounts until they run dry (422 expected)',
};

/** Statuses that are a correct answer besides 200 (only redemption refuses by design). */
export const EXPECTED_REFUSALS: Record<ScenarioName, number[]> = {
  points_earn: [],
  points_earn_rules: [],
  points_earn_tiers: [],
  cashback_earn: [],
  points_balance: [],
  points_history: [],
  cashback_redeem: [422],
};

export interface HttpScenario {
  next: () => HttpRequestSpec;
  /** After the run: consistency checks; returns the problems found. */
  check?: () => Promise<string[]>;
}

const json = { 'content-type': 'application/json' };

export function httpScenario(
  name: ScenarioName,
  f: Fixture,
  side: 'warmup' | 'full',
  api: Api,
  connections: number,
): HttpScenario {
  let i = side === 'warmup' ? 7919 : 0; // warm-up starts elsewhere in the member pool
  const member = () => f.members[i++ % f.members.length]!;
  switch (name) {
    case 'points_earn':
      return {
        next: () => ({
          method: 'POST',
          path: '/api/v1/loyalty/points/earn',
          headers: json,
          body: JSON.stringify({ card_id: f.pointsCardId, member_id: member(), purchase_amount: 10 + (i % 90) }),
        }),
      };
    case 'points_earn_rules':
      return {
        next: () => ({
          method: 'POST',
          path: '/api/v1/loyalty/points/earn',
          headers: json,
          body: JSON.stringify({ card_id: f.rulesCardId, member_id: member(), ...RULES_PURCHASE }),
        }),
      };
    case 'points_earn_tiers':
      return {
        next: () => ({
          method: 'POST',
          path: '/api/v1/loyalty/points/earn',
          headers: json,
          body: JSON.stringify({ card_id: f.tiersCardId, member_id: member(), purchase_amount: 10 + (i % 90) }),
        }),
      };
    case 'cashback_earn':
      return {
        next: () => ({
          method: 'POST',
          path: '/api/v1/cashback/cashback/earn',
          headers: json,
          body: JSON.stringify({ card_id: f.cashbackCardId, member_id: member(), purchase_amount: 12.34 + (i % 100) }),
        }),
      };
    case 'points_balance':
      return {
        next: () => ({
          method: 'GET',
          path: `/api/v1/loyalty/points/balance?card_id=${f.pointsCardId}&member_id=${member()}`,
        }),
      };
    case 'points_history':
      return {
        next: () => ({
          method: 'GET',
          path: `/api/v1/loyalty/points/history?card_id=${f.pointsCardId}&member_id=${f.historyMemberId}&limit=20&offset=0`,
        }),
      };
    case 'cashback_redeem':
      return redeemScenario(f, f.redeemers[side], api, connections);
  }
}

function redeemScenario(f: Fixture, accounts: Redeemer[], api: Api, inFlight: number): HttpScenario {
  const redeemed = accounts.map(() => 0);
  let i = 0;
  const body = JSON.stringify({ card_id: f.cashbackCardId, amount: REDEEM_AMOUNT_CENTS / 100 });
  return {
    next: () => {
      const k = i++ % accounts.length;
      return {
        method: 'POST',
        path: '/api/v1/cashback/cashback/redeem',
        headers: { ...json, 'x-member-token': accounts[k]!.token },
        body,
        onAnswer: (status) => {
          if (status === 200) redeemed[k]! += 1;
        },
      };
    },
    // No overdraft: every account holds exactly its start minus what the 200s took, never below zero.
    async check() {
      const problems: string[] = [];
      for (const [k, a] of accounts.entries()) {
        const data = await api.ok<{ cashback_balance: number }>(
          f.app,
          'GET',
          `/api/v1/cashback/cashback/balance?card_id=${f.cashbackCardId}&member_id=${a.memberId}`,
        );
        const cents = Math.round(data.cashback_balance * 100);
        const expected = a.startCents - redeemed[k]! * REDEEM_AMOUNT_CENTS;
        if (cents < 0) problems.push(`overdraft: account of member ${a.memberId} holds ${cents} cents`);
        // Requests cut off by the end of the run may have committed unseen: at most one per connection.
        if (cents > expected || expected - cents > REDEEM_AMOUNT_CENTS * inFlight) {
          problems.push(
            `member ${a.memberId}: balance ${cents} cents, expected ${expected} (start ${a.startCents} - ${redeemed[k]} x ${REDEEM_AMOUNT_CENTS})`,
          );
        }
      }
      return problems;
    },
  };
}
