export { startReferrals, type ReferralsHooks, type RunningReferrals } from './service.ts';
export { readConfig as readReferralsConfig, ReferralsConfig } from './config.ts';
