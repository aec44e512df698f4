export { startReferrals, type ReferralsHooks, type RunningReferrals } from './service.ts';
export { readConfig as readReferralsConfig, ReferralsConfig } from './config.ts';
// The statistics queries without a running service: bench/referrals-stats.ts times the service's
// own SQL on a scratch database of many referrals.
export { periodStart } from './domain/stats.ts';
export { countReferrals, topReferrers } from './store/referrals.ts';
