// Demo data for `npm start`, through the operator API. Idempotent: when var/demo-credentials.json
// exists and its keys still work, nothing is created again; otherwise two sandbox tenants are made,
// each with an app holding every scope and one holding only the read scopes, a cashback card,
// and a points card with referral bonuses and two rewards.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// LOYALTY_DEMO: another file (the README walkthrough's test seeds a system of its own).
const file = process.env.LOYALTY_DEMO
  ? path.resolve(process.env.LOYALTY_DEMO)
  : path.join(root, 'var', 'demo-credentials.json');
const baseUrl = (process.env.LOYALTY_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
const token = process.env.OPERATOR_TOKEN;
if (!token) throw new Error('OPERATOR_TOKEN is not set');

const ALL_SCOPES = [
  'points_read',
  'points_write',
  'cashback_read',
  'cashback_write',
  'card_read',
  'webhooks_manage',
  'programme_manage',
  'members_manage',
];
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
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { success: boolean; data: T; error?: unknown };
  if (!json.success) throw new Error(`${method} ${urlPath}: ${JSON.stringify(json.error)}`);
  return json.data;
}

/** The existing demo, if its first app's key still authenticates and holds every scope of today. */
async function existingDemo(): Promise<Demo | undefined> {
  if (!existsSync(file)) return undefined;
  const demo = JSON.parse(readFileSync(file, 'utf8')) as Demo;
  const app = demo.tenants[0]?.apps[0];
  // A demo made before a scope existed (webhooks_manage) is made again, so every step of the README works.
  if (!app || !ALL_SCOPES.every((s) => app.scopes.includes(s))) return undefined;
  const res = await fetch(`${baseUrl}/api/v1/auth/member/check`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-app-id': app.app_id, 'x-api-key': app.api_key },
    body: JSON.stringify({ email: 'seed-probe@example.com' }),
  });
  return res.ok ? demo : undefined;
}

async function createTenant(name: string): Promise<DemoTenant> {
  const { tenant } = await admin<{ tenant: { id: number; name: string; sandbox: boolean } }>(
    'POST',
    '/admin/v1/tenants',
    { name, sandbox: true },
  );
  const apps: DemoApp[] = [];
  for (const [appName, scopes] of [
    ['full access', ALL_SCOPES],
    ['read only', READ_SCOPES],
  ] as const) {
    const { app } = await admin<{ app: DemoApp }>('POST', `/admin/v1/tenants/${tenant.id}/apps`, {
      name: `${name} ${appName}`,
      scopes,
    });
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

// Cards and rewards of each demo tenant, found by their unique_identifier or created.
interface Card {
  id: number;
  unique_identifier: string;
  name: string;
  reward_system: string;
}
interface Reward {
  id: number;
  name: string;
  points_cost: number;
}
const demoCards = [
  {
    unique_identifier: 'demo-cashback',
    name: 'Demo Cashback',
    description: '10% back on every purchase from 1.00, at most 50.00 a purchase',
    reward_system: 'cashback',
    cashback_config: {
      cashback_percentage: 10,
      cashback_min_amount: 1,
      cashback_max_amount: 50,
      allows_pin_redemption: false,
    },
  },
  {
    unique_identifier: 'demo-points',
    name: 'Demo Points',
    description: 'One point per unit spent; referrals pay 100 points to the referrer and 50 to the new member',
    reward_system: 'points',
    points_ratio: 1,
    referrer_bonus: 100,
    referee_bonus: 50,
  },
];
const demoRewards = [
  { name: 'Free coffee', points_cost: 100 },
  { name: 'Pastry box', points_cost: 250 },
];
for (const tenant of demo.tenants) {
  const { cards: existing } = await admin<{ cards: Card[] }>('GET', `/admin/v1/tenants/${tenant.id}/cards`);
  const cards: Card[] = [];
  for (const wanted of demoCards) {
    const found = existing.find((c) => c.unique_identifier === wanted.unique_identifier);
    cards.push(found ?? (await admin<{ card: Card }>('POST', `/admin/v1/tenants/${tenant.id}/cards`, wanted)).card);
  }
  const pointsCard = cards.find((c) => c.reward_system === 'points')!;
  const { rewards: have } = await admin<{ rewards: Reward[] }>(
    'GET',
    `/admin/v1/tenants/${tenant.id}/cards/${pointsCard.id}`,
  );
  const rewards: Reward[] = [];
  for (const wanted of demoRewards) {
    rewards.push(
      have.find((r) => r.name === wanted.name) ??
        (
          await admin<{ reward: Reward }>(
            'POST',
            `/admin/v1/tenants/${tenant.id}/cards/${pointsCard.id}/rewards`,
            wanted,
          )
        ).reward,
    );
  }
  tenant.cards = cards.map((c) => ({
    id: c.id,
    unique_identifier: c.unique_identifier,
    name: c.name,
    reward_system: c.reward_system,
  }));
  tenant.rewards = rewards.map((r) => ({ id: r.id, card_id: pointsCard.id, name: r.name, points_cost: r.points_cost }));
  // A manager of the staff console (/console): a sandbox tenant shows the sign-in code on screen.
  const managerEmail = `manager@${tenant.name.toLowerCase().replace(/[^a-z]+/g, '-')}.example`;
  const { staff } = await admin<{ staff: { email: string }[] }>('GET', `/admin/v1/tenants/${tenant.id}/staff`);
  if (!staff.some((s) => s.email === managerEmail))
    await admin('POST', `/admin/v1/tenants/${tenant.id}/staff`, {
      email: managerEmail,
      name: 'Demo Manager',
      role: 'manager',
    });
  tenant.console = { url: `${baseUrl}/console/?tenant=${tenant.id}`, manager_email: managerEmail };
}

mkdirSync(path.dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(demo, null, 2)}\n`);
console.log(`demo credentials written to ${path.relative(process.cwd(), file)}`);
