import { memberMergeInternalOperations } from '@loyalty/contracts';
import { mergeClaims } from './member-merge.ts';
import {
  packageDir,
  ReplayStore,
  runService,
  ServiceClient,
  type Clock,
  type Logger,
  type RunningService,
  type ServiceDeclaration,
  type ServiceRuntime,
} from '@loyalty/runtime';
import { approvals, type ClaimFaults } from './approval.ts';
import { claimRequests, type ClaimDeps } from './claim-requests.ts';
import type { ClaimsConfig } from './config.ts';
import { claimsConsumers } from './consumers.ts';
import { claimsEndpoints } from './endpoints.ts';
import { claimsMemberData } from './member-data.ts';
import { claimsClients } from './clients.ts';
import { claimHolds } from './claim-holds.ts';
import { staffQueue } from './staff-queue.ts';
import type { ClaimSweep } from './sweeper.ts';
import { claimsTasks } from './tasks.ts';

export const SERVICE_VERSION = '0.1.0';

export interface ClaimsHooks {
  /** Run one sweep now (expiry and stalled approvals) instead of waiting for the interval. */
  sweep(): Promise<ClaimSweep>;
}

export type RunningClaims = RunningService<ClaimsHooks>;

export interface ClaimsOptions {
  log?: Logger;
  /** Source of time for created_at, expiry and the sweeper (tests pass a ManualClock). */
  clock?: Clock;
  /** Test-only fault injection; deliberately not configurable from the environment. */
  faults?: ClaimFaults;
}

/** Composition root: the claims endpoints and the claim sweeper. */
export function startClaims(config: ClaimsConfig, opts: ClaimsOptions = {}): Promise<RunningClaims> {
  return runService(
    {
      name: 'claims',
      version: SERVICE_VERSION,
      migrationsDir: packageDir(import.meta.url, '../migrations'),
      setup: (rt) => setupClaims(rt, config, opts.faults),
    },
    { config, log: opts.log, clock: opts.clock },
  );
}

async function setupClaims(
  rt: ServiceRuntime,
  config: ClaimsConfig,
  faults: ClaimFaults | undefined,
): Promise<ServiceDeclaration<ClaimsHooks>> {
  const { pool, nc, subjects, log, outbox, clock } = rt;
  const clients = claimsClients(new ServiceClient(nc, subjects, { timeoutMs: config.REQUEST_TIMEOUT_MS, log }));
  const holds = claimHolds({ pool, clients, log });
  // The sweeper finishes stalled approvals; requests expire through it when they are read late.
  const { claimSweeper } = claimsTasks({ pool, outbox, clock, log, holds }, config, (claim) =>
    approval.resume(claim, log),
  );
  const deps: ClaimDeps = {
    pool,
    clock,
    clients,
    holds,
    outbox,
    replays: new ReplayStore(pool, 'claims'),
    expireIfDue: async (tenantId, id) => void (await claimSweeper.expire({ tenantId, id })),
  };
  const approval = approvals(deps, faults);
  // The staff's queue, for the business dashboard (the partial index claim_requests_due holds exactly
  // these rows, so the count reads the index, not the table).
  rt.metrics.gauge('loyalty_claims_pending', 'Claim requests waiting for a decision, all tenants', async () => {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*) AS n FROM claims.claim_requests WHERE status = 'pending'`,
    );
    return rows[0]?.n ?? 0;
  });
  const requests = claimRequests(deps);
  return {
    endpoints: claimsEndpoints(
      requests,
      approval,
      staffQueue(deps, requests, approval),
      claimsMemberData(pool),
    ).internal(memberMergeInternalOperations.claimsMerge, (d, x) => mergeClaims(pool, d, x.meta)),
    tenantData: [{ table: 'claim_requests' }],
    consumers: claimsConsumers(),
    tasks: [claimSweeper],
    caches: [],
    hooks: { sweep: () => claimSweeper.sweep() },
  };
}
