import {
  packageDir,
  ReplayStore,
  runService,
  ServiceClient,
  systemClock,
  type Clock,
  type Logger,
  type RunningService,
} from '@loyalty/runtime';
import { approvals, type ClaimFaults } from './approval.ts';
import { claimRequests, type ClaimDeps } from './claim-requests.ts';
import type { ClaimsConfig } from './config.ts';
import { claimsEndpoints } from './endpoints.ts';
import { claimsClients } from './clients.ts';
import { claimHolds } from './claim-holds.ts';
import { staffQueue } from './staff-queue.ts';
import { ClaimSweeper, type ClaimSweep } from './sweeper.ts';

export const SERVICE_VERSION = '0.1.0';

export interface RunningClaims extends RunningService {
  /** Run one sweep now (expiry and stalled approvals) instead of waiting for the interval. */
  sweep(): Promise<ClaimSweep>;
}

export interface ClaimsOptions {
  log?: Logger;
  /** Source of time for created_at, expiry and the sweeper (tests pass a ManualClock). */
  clock?: Clock;
  /** Test-only fault injection; deliberately not configurable from the environment. */
  faults?: ClaimFaults;
}

/** Composition root: config -> connections -> endpoints -> shutdown. */
export async function startClaims(config: ClaimsConfig, opts: ClaimsOptions = {}): Promise<RunningClaims> {
  let sweeper: ClaimSweeper | undefined;
  const running = await runService({
    name: 'claims',
    version: SERVICE_VERSION,
    config,
    log: opts.log,
    clock: opts.clock,
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup({ pool, nc, subjects, log, outbox }) {
      const clock = opts.clock ?? systemClock;
      const clients = claimsClients(new ServiceClient(nc, subjects, { timeoutMs: config.REQUEST_TIMEOUT_MS, log }));
      const holds = claimHolds({ pool, clients, log });
      const deps: ClaimDeps = {
        pool,
        clock,
        clients,
        holds,
        outbox,
        replays: new ReplayStore(pool, 'claims'),
        expireIfDue: async (tenantId, id) => void (await sweeper!.expire({ tenantId, id })),
      };
      const approval = approvals(deps, opts.faults);
      sweeper = new ClaimSweeper({
        pool,
        outbox,
        clock,
        log,
        intervalMs: config.CLAIM_SWEEP_INTERVAL_MS,
        resumeAfterMs: config.CLAIM_APPROVAL_RESUME_AFTER_MS,
        resume: (claim) => approval.resume(claim, log),
        holds,
      });
      sweeper.start();
      const requests = claimRequests(deps);
      return {
        endpoints: claimsEndpoints(requests, approval, staffQueue(deps, requests, approval)),
        stop: async () => {
          await sweeper?.stop();
        },
      };
    },
  });
  return { ...running, sweep: () => sweeper!.sweep() };
}
