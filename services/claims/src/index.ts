export { startClaims, type RunningClaims, type ClaimsOptions } from './service.ts';
export type { ClaimFaults } from './approval.ts';
export { readConfig as readClaimsConfig, ClaimsConfig } from './config.ts';
