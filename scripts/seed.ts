// Demo data for `npm start`, through the operator API. Idempotent: when var/demo-credentials.json
// exists and its keys still work, nothing is created again; otherwise two sandbox tenants are made,
// each with an app holding all five scopes and one holding only the read scopes.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = path.join(root, 'var', 'demo-credentials.json');
const baseUrl = (process.env.LOYALTY_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
const token = process.env.OPERATOR_TOKEN;
if (!token) throw new Error('OPERATOR_TOKEN is not set');

const ALL_SCOPES = ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read'];
const READ_SCOPES = ['points_read', 'cashback_read', 'card_read'];

interface DemoApp {
  app_id: string;
  api_key: string;
  scopes: string[];
}
export interface DemoTenant {
  id: number;
  name: string;
  sandbox: boolean;
  apps: DemoApp[];
  [extra: string]: unknown;
}
interface Demo {
  base_url: string;
  tenants: DemoTenant[];
}

export async function admin<T>(method: string, urlPath: string, body?: unknown): Promise<T> {
  const res = await fetch(`${baseUrl}${urlPath}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { success: boolean; data: T; error?: unknown };
  if (!json.success) throw new Error(`${method} ${urlPath}: ${JSON.stringify(json.error)}`);
  return json.data;
}

/** The existing demo, if its first app's key still authenticates. */
async function existingDemo(): Promise<Demo | undefined> {
  if (!existsSync(file)) return undefined;
  const demo = JSON.parse(readFileSync(file, 'utf8')) as Demo;
  const app = demo.tenants[0]?.apps[0];
  if (!app) return undefined;
  const res = await fetch(`${baseUrl}/api/v1/auth/member/check`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-app-id': app.app_id, 'x-api-key': app.api_key },
    body: JSON.stringify({ email: 'seed-probe@example.com' }),
  });
  return res.ok ? demo : undefined;
}

async function createTenant(name: string): Promise<DemoTenant> {
  const { tenant } = await admin<{ tenant: { id: number; name: string; sandbox: boolean } }>('POST', '/admin/v1/tenants', { name, sandbox: true });
  const apps: DemoApp[] = [];
  for (const [appName, scopes] of [
    ['full access', ALL_SCOPES],
    ['read only', READ_SCOPES],
  ] as const) {
    const { app } = await admin<{ app: DemoApp }>('POST', `/admin/v1/tenants/${tenant.id}/apps`, { name: `${name} ${appName}`, scopes });
    apps.push({ app_id: app.app_id, api_key: app.api_key, scopes: [...scopes] });
  }
  return { id: tenant.id, name: tenant.name, sandbox: tenant.sandbox, apps };
}

let demo = await existingDemo();
if (demo) {
  console.log(`demo already seeded (${file})`);
} else {
  demo = { base_url: baseUrl, tenants: [await createTenant('Demo Coffee'), await createTenant('Demo Books')] };
  console.log(`demo tenants and apps created`);
}

mkdirSync(path.dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(demo, null, 2)}\n`);
console.log(`demo credentials written to ${path.relative(process.cwd(), file)}`);
