export { startIdentity, type IdentityHooks, type RunningIdentity } from './service.ts';
export { readConfig as readIdentityConfig, IdentityConfig } from './config.ts';
// The audit log's append and verification without a running service: bench/audit-chain.ts times
// them on a scratch database, through the same code the consumer and the staff API run.
export { auditLog } from './audit/audit-log.ts';
export { AuditKeyring } from './domain/audit-chain.ts';
