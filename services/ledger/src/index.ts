// The ledger's public API: start it, and read its configuration.
export { startLedger, type RunningLedger } from './service.ts';
export { readConfig as readLedgerConfig, LedgerConfig } from './config.ts';

// A deliberate second surface, for the benchmark's tuned baseline (bench/baseline-tuned.ts), which
// measures the database's ceiling for exactly what the ledger issues: the posting statements and
// their group commit, and the statements of a balance and a history read. Nothing else should
// depend on them.
export { PostingBatcher } from './posting-batcher.ts';
export { findBalance, JOURNAL_PAGE, postingStatement, postMany, type Posting } from './store/accounts.ts';
export { accountState } from './lots/store.ts';
