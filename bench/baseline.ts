// Placeholder until the ledger's SQL lands.
import type pg from 'pg';
import type { DirectOutcome } from './load.ts';
import type { ScenarioName } from './options.ts';
import type { Fixture } from './provision.ts';

export function baselineScenario(_name: ScenarioName, _pool: pg.Pool, _f: Fixture, _side: 'warmup' | 'baseline'): { op: (i: number) => Promise<DirectOutcome>; check?: () => Promise<string[]> } {
  return { op: async () => 200 };
}
