import type pg from 'pg';
import { expect, it } from 'vitest';
import { checkJobResults, checkRuleUpdates } from '../../soak/invariants.ts';
import type { OpRecord } from '../../soak/workload.ts';

/**
 * The soak's checks of earning-rule updates and downloaded job results, over recorded operations
 * and the rows a database would answer (no stack).
 */
const db = (rows: unknown[]) => ({ query: () => Promise.resolve({ rows }) }) as unknown as pg.Client;
let n = 0;
const op = (o: Partial<OpRecord>): OpRecord => ({
  n: ++n,
  kind: 'rule_update',
  tenantId: 1,
  method: 'GET',
  path: '/',
  startedAt: 0,
  endedAt: 0,
  status: 200,
  attempts: 1,
  outcome: 'ack',
  ...o,
});
const update = (
  ruleId: number,
  body: Record<string, unknown>,
  version?: number,
  outcome: OpRecord['outcome'] = 'ack',
) =>
  op({
    method: 'PATCH',
    path: `/api/v1/loyalty/cards/2/rules/${ruleId}`,
    body,
    outcome,
    status: outcome === 'ack' ? 200 : 0,
    ...(version === undefined ? {} : { text: JSON.stringify({ data: { rule: { id: ruleId, version } } }) }),
  });
const version = (ruleId: number, v: number, definition: Record<string, unknown>) => ({
  rule_id: String(ruleId),
  version: v,
  definition,
});

it('rule updates: one version per acknowledged update holding what it asked, at most one per unanswered', async () => {
  const versions = [
    version(1, 1, { kind: 'multiplier', factor: 2 }),
    version(1, 2, { kind: 'multiplier', factor: 3 }),
    version(1, 3, { kind: 'multiplier', factor: 2 }),
    version(2, 1, { kind: 'fixed', points: 7 }),
  ];
  const ops = [update(1, { factor: 3 }, 2), update(1, { factor: 2 }, undefined, 'failed')];
  expect((await checkRuleUpdates(db(versions), ops)).ok).toBe(true);
  // A version answered that holds another value; the same version answered twice.
  expect((await checkRuleUpdates(db(versions), [update(1, { factor: 2 }, 2), update(1, { factor: 2 }, 3)])).ok).toBe(
    false,
  );
  expect((await checkRuleUpdates(db(versions), [update(1, { factor: 3 }, 2), update(1, { factor: 3 }, 2)])).ok).toBe(
    false,
  );
  // A new version no acknowledged or unanswered update accounts for (here: a refused one).
  const refused = [update(1, { factor: 3 }, 2), update(1, { factor: 2 }, undefined, 'refused')];
  const r = await checkRuleUpdates(db(versions), refused);
  expect(r.ok).toBe(false);
  expect(r.figure).toContain('1 rules whose new versions are not between');
  // An acknowledged update that left no version.
  expect((await checkRuleUpdates(db([version(1, 1, { factor: 2 })]), [update(1, { factor: 3 }, 2)])).ok).toBe(false);
});

it("job results: rows are the journal's, field for field in the card's unit, each once; none refused", async () => {
  const journal = [
    { id: '10', line: '10|2|5|points_earned|40|140', cashback: false },
    { id: '11', line: '11|3|5|cashback_earned|1234|5000', cashback: true },
  ];
  const download = (rows: string[], outcome: OpRecord['outcome'] = 'ack') =>
    op({ kind: 'job_result', path: '/api/v1/jobs/job_ledger_x/result', rows, outcome });
  const good = download(['10|2|5|points_earned|40|140', '11|3|5|cashback_earned|12.34|50']);
  expect((await checkJobResults(db(journal), [good])).ok).toBe(true);
  expect((await checkJobResults(db(journal), [download(['10|2|5|points_earned|41|140'])])).ok).toBe(false);
  expect((await checkJobResults(db(journal), [download(['12|2|5|points_earned|1|1'])])).ok).toBe(false);
  expect(
    (await checkJobResults(db(journal), [download(['10|2|5|points_earned|40|140', '10|2|5|points_earned|40|140'])])).ok,
  ).toBe(false);
  const refused = op({ kind: 'job_result', status: 404, code: 'job_result_not_found', outcome: 'refused' });
  expect((await checkJobResults(db(journal), [good, refused])).ok).toBe(false);
});
