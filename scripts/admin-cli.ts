// loyalty-admin: the operator's CLI over the provisioning API (/admin/v1).
// Usage: loyalty-admin <command> [options]   (run `loyalty-admin help`)
import { parseArgs } from 'node:util';

const usage = `loyalty-admin: provision tenants, apps and keys through the admin API

Environment: LOYALTY_URL (default http://127.0.0.1:3000), OPERATOR_TOKEN (required)

Commands:
  tenant:create --name NAME [--sandbox]           create a tenant (sandbox: OTP codes in responses, mail to the sink)
  tenant:list                                     list tenants
  app:create --tenant ID --name NAME [--scopes a,b] create an app; prints its API key once
  app:list --tenant ID                            list a tenant's apps (never their keys)
  app:rotate --app APP_ID                         issue a new key; the old one stops working at once
  app:revoke --app APP_ID                         revoke an app; its key stops working at once
  card:create --tenant ID --name NAME --cashback PCT [--min AMT] [--max AMT] [--pin]
              | --tenant ID --name NAME --points-ratio R [--referrer N] [--referee N]
                                                  create a cashback or a points card
  card:list --tenant ID                           list a tenant's cards
  card:update --tenant ID --card ID JSON          change a card's settings, e.g. '{"referrer_bonus":100}'
  reward:create --tenant ID --card ID --name NAME --cost POINTS   add a reward to a points card
  reward:deactivate --tenant ID --card ID --reward ID             withdraw a reward
  call METHOD PATH [JSON]                         any other admin call, e.g. call POST /admin/v1/tenants/1/cards '{...}'
`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string' },
    sandbox: { type: 'boolean', default: false },
    tenant: { type: 'string' },
    scopes: { type: 'string' },
    app: { type: 'string' },
    card: { type: 'string' },
    reward: { type: 'string' },
    cashback: { type: 'string' },
    min: { type: 'string' },
    max: { type: 'string' },
    pin: { type: 'boolean', default: false },
    'points-ratio': { type: 'string' },
    referrer: { type: 'string' },
    referee: { type: 'string' },
    cost: { type: 'string' },
  },
});

const baseUrl = (process.env.LOYALTY_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
const token = process.env.OPERATOR_TOKEN;

function need(value: string | undefined, flag: string): string {
  if (!value) {
    console.error(`missing --${flag}\n\n${usage}`);
    process.exit(2);
  }
  return value;
}

async function call(method: string, path: string, body?: unknown): Promise<void> {
  if (!token) {
    console.error('OPERATOR_TOKEN is not set');
    process.exit(2);
  }
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { success: boolean };
  console.log(JSON.stringify(json, null, 2));
  if (!json.success) process.exit(1);
}

const [command, ...rest] = positionals;
switch (command) {
  case 'tenant:create':
    await call('POST', '/admin/v1/tenants', { name: need(values.name, 'name'), sandbox: values.sandbox });
    break;
  case 'tenant:list':
    await call('GET', '/admin/v1/tenants');
    break;
  case 'app:create':
    await call('POST', `/admin/v1/tenants/${need(values.tenant, 'tenant')}/apps`, {
      name: need(values.name, 'name'),
      scopes: values.scopes
        ? values.scopes
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : [],
    });
    break;
  case 'app:list':
    await call('GET', `/admin/v1/tenants/${need(values.tenant, 'tenant')}/apps`);
    break;
  case 'app:rotate':
    await call('POST', `/admin/v1/apps/${encodeURIComponent(need(values.app, 'app'))}/rotate-key`);
    break;
  case 'app:revoke':
    await call('POST', `/admin/v1/apps/${encodeURIComponent(need(values.app, 'app'))}/revoke`);
    break;
  case 'card:create': {
    const tenant = need(values.tenant, 'tenant');
    const base = {
      name: need(values.name, 'name'),
      referrer_bonus: Number(values.referrer ?? 0),
      referee_bonus: Number(values.referee ?? 0),
    };
    const body = values.cashback
      ? {
          ...base,
          reward_system: 'cashback',
          cashback_config: {
            cashback_percentage: Number(values.cashback),
            cashback_min_amount: Number(values.min ?? 0),
            cashback_max_amount: values.max === undefined ? null : Number(values.max),
            allows_pin_redemption: values.pin,
          },
        }
      : {
          ...base,
          reward_system: 'points',
          points_ratio: Number(need(values['points-ratio'], 'points-ratio or --cashback')),
        };
    await call('POST', `/admin/v1/tenants/${tenant}/cards`, body);
    break;
  }
  case 'card:list':
    await call('GET', `/admin/v1/tenants/${need(values.tenant, 'tenant')}/cards`);
    break;
  case 'card:update':
    await call(
      'POST',
      `/admin/v1/tenants/${need(values.tenant, 'tenant')}/cards/${need(values.card, 'card')}`,
      JSON.parse(need(rest[0], 'JSON')),
    );
    break;
  case 'reward:create':
    await call(
      'POST',
      `/admin/v1/tenants/${need(values.tenant, 'tenant')}/cards/${need(values.card, 'card')}/rewards`,
      {
        name: need(values.name, 'name'),
        points_cost: Number(need(values.cost, 'cost')),
      },
    );
    break;
  case 'reward:deactivate':
    await call(
      'POST',
      `/admin/v1/tenants/${need(values.tenant, 'tenant')}/cards/${need(values.card, 'card')}/rewards/${need(values.reward, 'reward')}`,
      { active: false },
    );
    break;
  case 'call': {
    const [method, path, json] = rest;
    await call(need(method, 'METHOD').toUpperCase(), need(path, 'PATH'), json ? JSON.parse(json) : undefined);
    break;
  }
  default:
    console.log(usage);
    process.exit(command && command !== 'help' ? 2 : 0);
}
