export { startIdentity } from './service.ts';
export { readConfig as readIdentityConfig, IdentityConfig } from './config.ts';
