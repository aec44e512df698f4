export { startReferrals } from './service.ts';
export { readConfig as readReferralsConfig, ReferralsConfig } from './config.ts';
