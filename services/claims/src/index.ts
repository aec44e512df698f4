export { startClaims } from './service.ts';
export { readConfig as readClaimsConfig, ClaimsConfig } from './config.ts';
