// Apply the SQL migrations of every service (or those named in SERVICES=identity,ledger) and exit.
// Services also migrate at start (MIGRATE_ON_START); this is for a Kubernetes migration Job or a
// deploy step that runs before the services with MIGRATE_ON_START=false.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, migrate } from '@loyalty/runtime';

const here = path.dirname(fileURLToPath(import.meta.url));
// From scripts/ (tsx) or scripts/dist/ (compiled): the repository root holds services/.
const root = existsSync(path.join(here, '..', 'services')) ? path.join(here, '..') : path.join(here, '..', '..');
const log = createLogger('migrate', process.env.LOG_LEVEL ?? 'info');
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/loyalty';
const services = (process.env.SERVICES ?? 'identity,ledger,claims,referrals,webhooks')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);

for (const name of services) {
  const dir = path.join(root, 'services', name, 'migrations');
  if (!existsSync(dir)) {
    log.fatal({ dir }, `no migrations folder for ${name}`);
    process.exit(1);
  }
  await migrate({ databaseUrl, schema: name, dir, log });
  log.info({ schema: name }, 'schema up to date');
}
