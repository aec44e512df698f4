import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sharedMigrations } from '../../libs/runtime/src/shared-tables.ts';
import { migrationViolations, serviceMigrations } from '../support/migration-rules.ts';

/**
 * Migrations must not block writes on tables that can be large: every migration of every service
 * (and the runtime's shared tables) is checked against the rules of docs/operations.md.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Released before the rules existed: an index on an existing table mixed with other changes, or a
 * constraint added validated (not rewritten: that would change what an upgrade runs). They ran
 * when those tables were new or small. No migration written after the rules may join this list.
 */
const BEFORE_THE_RULE = new Set([
  'services/identity/migrations/1700000000010_staff_and_audit.sql', // otps_staff_purpose, with the staff tables
  'services/ledger/migrations/1700000000005_lots.sql', // accounts_due, with the lots tables
  'services/claims/migrations/1700000000002_claim_holds.sql', // two indexes, with the hold columns
  'services/ledger/migrations/1700000000010_staff_adjustment.sql', // the journal's event CHECK, re-added validated
  'services/ledger/migrations/1700000000004_balance_limit.sql', // the accounts' balance CHECK, added validated
  'services/identity/migrations/1700000000015_audit_keyed_chain.sql', // the audit log's chain CHECK, added validated
]);

describe('migration rules', () => {
  it('every migration builds indexes on tables that can be large without blocking writes', () => {
    const files = [
      ...serviceMigrations(root),
      ...sharedMigrations.map((m) => ({
        file: `libs/runtime shared ${m.name}${m.noTransaction ? '.no-transaction.sql' : '.sql'}`,
        sql: m.sql,
      })),
    ];
    expect(files.length).toBeGreaterThan(20);
    const problems = files
      .filter((f) => !BEFORE_THE_RULE.has(f.file))
      .flatMap((f) => migrationViolations(f.file, f.sql));
    expect(problems).toEqual([]);
    // The exceptions are still exceptions (a fixed one leaves the list).
    for (const file of BEFORE_THE_RULE) {
      const f = files.find((x) => x.file === file);
      expect(f, file).toBeDefined();
      expect(migrationViolations(f!.file, f!.sql), file).not.toEqual([]);
    }
  });

  it('flags a plain CREATE INDEX on a large table in a new migration', () => {
    expect(migrationViolations('2000_x.sql', 'CREATE INDEX journal_new ON journal (created_at);')).toEqual([
      expect.stringContaining('plain CREATE INDEX on journal'),
    ]);
    expect(
      migrationViolations('2000_x.sql', '-- Up Migration\nCREATE UNIQUE INDEX IF NOT EXISTS k ON ledger.lots (a, b);'),
    ).toEqual([expect.stringContaining('plain CREATE INDEX on lots')]);
    expect(migrationViolations('2000_x.sql', 'CREATE INDEX ON idempotency_keys (created_at);')).toHaveLength(1);
  });

  it('flags a validated CHECK or FOREIGN KEY added to a large table, and accepts NOT VALID', () => {
    const check = "ALTER TABLE journal ADD CONSTRAINT j_event CHECK (event IN ('a'));";
    expect(migrationViolations('2000_x.sql', check)).toEqual([expect.stringContaining('ADD CONSTRAINT on journal')]);
    expect(
      migrationViolations('2000_x.sql', 'ALTER TABLE ledger.lots ADD CONSTRAINT f FOREIGN KEY (a) REFERENCES b (id);'),
    ).toHaveLength(1);
    expect(
      migrationViolations('2000_x.sql', "EXECUTE format('ALTER TABLE journal ADD CONSTRAINT %I %s', a, b);"),
    ).toHaveLength(1);
    expect(migrationViolations('2000_x.sql', check.replace(';', ' NOT VALID;'))).toEqual([]);
    expect(migrationViolations('2000_x.sql', 'ALTER TABLE cards ADD CONSTRAINT c CHECK (id > 0);')).toEqual([]);
  });

  it('accepts the ways that do not block: concurrently outside a transaction, a new table, a small table', () => {
    const concurrent = 'CREATE INDEX CONCURRENTLY IF NOT EXISTS journal_new ON journal (created_at);';
    expect(migrationViolations('2000_x.no-transaction.sql', concurrent)).toEqual([]);
    expect(migrationViolations('2000_x.sql', 'CREATE TABLE big (id int);\nCREATE INDEX big_id ON big (id);')).toEqual(
      [],
    );
    expect(migrationViolations('2000_x.sql', 'CREATE INDEX cards_name ON cards (name);')).toEqual([]);
    // Indexes in the down section are not built by an upgrade.
    expect(
      migrationViolations('2000_x.sql', '-- Up Migration\n-- Down Migration\nCREATE INDEX j ON journal (a);'),
    ).toEqual([]);
  });

  it('flags CONCURRENTLY inside a transaction, and a no-transaction index that cannot run twice', () => {
    const concurrent = 'CREATE INDEX CONCURRENTLY IF NOT EXISTS j ON journal (a);';
    expect(migrationViolations('2000_x.sql', concurrent)).toEqual([
      expect.stringContaining('needs a *.no-transaction'),
    ]);
    expect(migrationViolations('2000_x.no-transaction.sql', 'CREATE INDEX CONCURRENTLY j ON journal (a);')).toEqual([
      expect.stringContaining('without IF NOT EXISTS'),
    ]);
    expect(migrationViolations('2000_x.no-transaction.sql', 'CREATE INDEX IF NOT EXISTS j ON journal (a);')).toEqual([
      expect.stringContaining('plain CREATE INDEX on journal in a no-transaction'),
    ]);
  });
});
