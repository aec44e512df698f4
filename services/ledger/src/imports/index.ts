import { importKind, Imports, type ServiceClient, type ServiceRuntime } from '@loyalty/runtime';
import { balanceImportSpec } from './balances.ts';
import { historyImportSpec } from './history.ts';
import { tierImportSpec } from './tiers.ts';

/** The ledger's imports (balances, tiers, history), asking identity for the members the lines name. */
export function ledgerImports(rt: ServiceRuntime, client: ServiceClient): Imports {
  return new Imports(
    rt.pool,
    'ledger',
    rt.jobs,
    {
      balances: importKind(balanceImportSpec(rt, client)),
      tiers: importKind(tierImportSpec(rt, client)),
      history: importKind(historyImportSpec(rt, client)),
    },
    () => rt.clock.now(),
  );
}
