export { startLedger } from './service.ts';
export { readConfig as readLedgerConfig, LedgerConfig } from './config.ts';
