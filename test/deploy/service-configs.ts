// The services' own config schemas, so the deployment files are checked against the variables the
// code really reads (names, defaults, which are required, which values are valid).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { ClaimsConfig } from '@loyalty/claims';
import { GatewayConfig } from '@loyalty/gateway';
import { IdentityConfig } from '@loyalty/identity';
import { LedgerConfig } from '@loyalty/ledger';
import { ReferralsConfig } from '@loyalty/referrals';
import { WebhooksConfig } from '@loyalty/webhooks';

export const root = path.resolve(import.meta.dirname, '..', '..');

const schemas: Record<string, z.ZodObject> = {
  gateway: GatewayConfig,
  identity: IdentityConfig,
  ledger: LedgerConfig,
  claims: ClaimsConfig,
  referrals: ReferralsConfig,
  webhooks: WebhooksConfig,
};

/** Every service of the repository: a folder under services/ with a src/main.ts. */
export const serviceNames: string[] = readdirSync(path.join(root, 'services'))
  .filter((name) => existsSync(path.join(root, 'services', name, 'src', 'main.ts')))
  .sort();

/** Services that own a Postgres schema (they have migrations). */
export const databaseServices: string[] = serviceNames.filter((name) => 'DATABASE_URL' in schemaOf(name).shape);

export function schemaOf(service: string): z.ZodObject {
  const schema = schemas[service];
  if (!schema)
    throw new Error(`no config schema known for service ${service}: add it to test/deploy/service-configs.ts`);
  return schema;
}

/** Variables Node itself reads: the production overlay trusts the NATS server's CA through it. */
export const nodeRuntimeVariables: string[] = ['NODE_EXTRA_CA_CERTS'];

/** Names of the environment variables a service reads. */
export const variablesOf = (service: string): string[] => [
  ...new Set([...Object.keys(schemaOf(service).shape), ...nodeRuntimeVariables]),
];

/** Variables without a default: the service does not start without them. */
export const requiredVariablesOf = (service: string): string[] =>
  Object.entries(schemaOf(service).shape)
    .filter(([, field]) => !(field as z.ZodType).safeParse(undefined).success)
    .map(([name]) => name);

/** The ops port a service listens on when OPS_PORT is not set. */
export const defaultOpsPort = (service: string): number =>
  (schemaOf(service).shape.OPS_PORT as z.ZodType<number>).parse(undefined);

/** Problems the service would report at start with this environment (empty when it starts). */
export function configProblems(service: string, env: Record<string, string>): string[] {
  const result = schemaOf(service).safeParse(env);
  return result.success ? [] : result.error.issues.map((i) => `${service}: ${i.path.join('.')}: ${i.message}`);
}

/** Variables scripts/migrate.ts (the migration Job) reads. */
export const migrateVariables: string[] = [
  ...readFileSync(path.join(root, 'scripts', 'migrate.ts'), 'utf8').matchAll(/process\.env\.([A-Z0-9_]+)/g),
].map((m) => m[1]!);
