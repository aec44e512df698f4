export { startIdentity, type IdentityHooks, type RunningIdentity } from './service.ts';
export { readConfig as readIdentityConfig, IdentityConfig } from './config.ts';
