import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NO_TRANSACTION_SUFFIX, upStatements } from '@loyalty/runtime';

/**
 * The migration rules (docs/operations.md, "Migrations") as a check over SQL files:
 * - an index on a table that already exists is built `CONCURRENTLY` in a no-transaction migration
 *   (`*.no-transaction.sql`), unless the table is one of the few that stay small (a plain
 *   `CREATE INDEX` holds a lock that blocks every write to the table for the whole build);
 * - `CONCURRENTLY` only in a no-transaction migration (PostgreSQL refuses it in a transaction);
 * - a no-transaction migration's index statements say `IF NOT EXISTS` (an interrupted migration
 *   runs again from its first statement) and build concurrently;
 * - a CHECK or FOREIGN KEY constraint added to a table that already exists (and can be large) is
 *   added `NOT VALID` and validated by `VALIDATE CONSTRAINT`, which does not block writes.
 */

/** Tables that hold configuration, not traffic: a plain index on them blocks writes for milliseconds. */
export const SMALL_TABLES = new Set(['tenants', 'apps', 'staff_users', 'cards', 'rewards', 'endpoints', 'audit_heads']);

const INDEX =
  /^CREATE\s+(UNIQUE\s+)?INDEX\s+(CONCURRENTLY\s+)?(IF\s+NOT\s+EXISTS\s+)?(?:"?[A-Za-z0-9_]+"?\s+)?ON\s+(?:ONLY\s+)?(?:"?[A-Za-z0-9_]+"?\.)?"?([A-Za-z0-9_]+)"?/i;
/** `ALTER TABLE t ADD CONSTRAINT c CHECK|FOREIGN KEY` (or a constraint built at run time, `%s`). */
const ADD_CONSTRAINT =
  /ALTER\s+TABLE\s+(?:ONLY\s+)?(?:IF\s+EXISTS\s+)?(?:"?[A-Za-z0-9_]+"?\.)?"?([A-Za-z0-9_]+)"?\s+ADD\s+CONSTRAINT\s+\S+\s+(?:CHECK|FOREIGN\s+KEY|%s)/i;
const CREATE_TABLE = /CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:"?[A-Za-z0-9_]+"?\.)?"?([A-Za-z0-9_]+)"?/gi;

/** What breaks the rules in one migration file (empty when nothing does). */
export function migrationViolations(file: string, sql: string): string[] {
  const outside = file.endsWith(NO_TRANSACTION_SUFFIX);
  const created = new Set([...sql.matchAll(CREATE_TABLE)].map((m) => m[1]!.toLowerCase()));
  const problems: string[] = [];
  for (const statement of upStatements(sql)) {
    const constraint = ADD_CONSTRAINT.exec(statement);
    const constrained = constraint?.[1]?.toLowerCase();
    if (constrained && !created.has(constrained) && !SMALL_TABLES.has(constrained) && !/NOT\s+VALID/i.test(statement))
      problems.push(
        `${file}: ADD CONSTRAINT on ${constrained}, a table that can be large, checks every row under a lock that blocks writes: add it NOT VALID, then VALIDATE CONSTRAINT`,
      );
    const index = INDEX.exec(statement);
    if (!index) continue;
    const [, , concurrently, ifNotExists, table] = index;
    const name = table!.toLowerCase();
    if (concurrently && !outside)
      problems.push(`${file}: CREATE INDEX CONCURRENTLY on ${name} needs a *${NO_TRANSACTION_SUFFIX} migration`);
    if (outside && !concurrently) problems.push(`${file}: plain CREATE INDEX on ${name} in a no-transaction migration`);
    if (outside && !ifNotExists)
      problems.push(`${file}: CREATE INDEX on ${name} without IF NOT EXISTS cannot run twice`);
    if (!concurrently && !outside && !created.has(name) && !SMALL_TABLES.has(name))
      problems.push(
        `${file}: plain CREATE INDEX on ${name}, a table that can be large: CREATE INDEX CONCURRENTLY IF NOT EXISTS in a *${NO_TRANSACTION_SUFFIX} migration`,
      );
  }
  return problems;
}

/** Every migration file of every service: `{ file: 'services/<name>/migrations/<file>', sql }`. */
export function serviceMigrations(root: string): { file: string; sql: string }[] {
  const services = path.join(root, 'services');
  return readdirSync(services).flatMap((service) => {
    const dir = path.join(services, service, 'migrations');
    let files: string[];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.sql'));
    } catch {
      return []; // the gateway has no database
    }
    return files.map((f) => ({
      file: `services/${service}/migrations/${f}`,
      sql: readFileSync(path.join(dir, f), 'utf8'),
    }));
  });
}
