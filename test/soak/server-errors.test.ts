import { expect, it } from 'vitest';
import { checkServerErrors } from '../../soak/invariants.ts';
import type { InjectedFault } from '../../soak/faults.ts';

/**
 * The soak's liveness check over answers alone: 5xx only 503, only within a fault window plus the
 * allowance; outside them, timeouts only within the suite's budget (a share of the attempts).
 */
const fault: InjectedFault = { at: 10, kind: 'postgres_latency', durationMs: 5000, startedAt: 10_000, endedAt: 15_000 };
const timeout = (at: number) => ({
  at,
  kind: 'claim_create',
  status: 503,
  gateway: 'g',
  error: 'service_unavailable: The service did not answer in time; try again.',
});

it('accepts 503s within a fault window and its allowance only', () => {
  const inWindow = { bad: [timeout(12_000), timeout(29_000)], attemptsTotal: 1000 };
  expect(checkServerErrors(inWindow, [fault], 15_000).ok).toBe(true);
  const after = { bad: [timeout(31_000)], attemptsTotal: 1000 };
  const r = checkServerErrors(after, [fault], 15_000);
  expect(r.ok).toBe(false);
  expect(r.figure).toMatch(/^0 other 5xx; 1 outside a window; 1 × 503/);
});

it('tolerates timeouts outside the windows up to the budget, never another error', () => {
  const two = { bad: [timeout(1_000), timeout(2_000)], attemptsTotal: 1000 };
  expect(checkServerErrors(two, [fault], 15_000, 0.002).ok).toBe(true); // 2 of at most 2
  expect(checkServerErrors(two, [fault], 15_000, 0.002).figure).toContain('(of them 2 timeouts, 2 tolerated)');
  expect(checkServerErrors(two, [fault], 15_000, 0.001).ok).toBe(false); // 2 of at most 1
  expect(checkServerErrors(two, [fault], 15_000).ok).toBe(false); // no budget: a recorded run
  const unavailable = { ...timeout(1_000), error: 'service_unavailable: The database is unavailable.' };
  expect(checkServerErrors({ bad: [unavailable], attemptsTotal: 1000 }, [fault], 15_000, 0.01).ok).toBe(false);
  const other = { ...timeout(12_000), status: 500 };
  expect(checkServerErrors({ bad: [other], attemptsTotal: 1000 }, [fault], 15_000, 0.01).ok).toBe(false);
});
