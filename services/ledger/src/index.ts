export { startLedger, type RunningLedger } from './service.ts';
export { readConfig as readLedgerConfig, LedgerConfig } from './config.ts';
// The statements and the group commit the ledger posts with, for callers that measure them
// directly (the benchmark's tuned baseline issues exactly what the ledger issues).
export { PostingBatcher } from './posting-batcher.ts';
export { findBalance, JOURNAL_PAGE, postingStatement, postMany, type Posting } from './store/accounts.ts';
export { accountState } from './lots/store.ts';
