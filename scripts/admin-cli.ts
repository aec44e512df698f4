// loyalty-admin: the operator's CLI over the provisioning API (/admin/v1).
// Usage: loyalty-admin <command> [options]   (run `loyalty-admin --help`)
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { runImport } from './admin-import.ts';
import { runExport } from './admin-export.ts';

export const usage = `loyalty-admin: provision tenants, apps, cards, rewards and webhooks through the operator API

Usage: loyalty-admin <command> [options] [--json]

Environment: LOYALTY_URL (default http://127.0.0.1:3000), OPERATOR_TOKEN (required)
Output: a table (lists, the fields beside them after it) or "field: value" lines by default; --json prints
the response's data as JSON.
Exit status: 0 done; 1 the API refused (its code and message) or could not be reached; 2 a wrong
command line (a missing or unknown flag or argument, bad JSON, a file that cannot be read).

Commands:
  tenant:create --name NAME [--sandbox] [--contact-email EMAIL]
                                                   create a tenant (sandbox: OTP codes in responses, mail to the sink)
  tenant:list                                      list tenants
  tenant:update --tenant ID --contact-email EMAIL|none
                                                   where the platform writes about the tenant's integration
  tenant:mail --tenant ID                          the tenant's mail settings (branding, language, Reply-To, SMTP)
  tenant:mail:set --tenant ID JSON                 replace them, e.g. '{"sender_name":"Café Atlas","default_locale":"fr",
                                                   "logo_url":"https://…/logo.png","primary_color":"#8a1c2b",
                                                   "postal_address":"…","smtp":{"host":"smtp.example.com","port":587,
                                                   "username":"u","password":"…"}}' (the password is stored sealed;
                                                   the environment's SMTP_PASSWORD is used when JSON names none)
  tenant:mail:templates --tenant ID                the message kinds, their variables and which languages have the
                                                   tenant's own template
  tenant:mail:template --tenant ID --kind KIND --locale en|fr|ar
                                                   one template (the tenant's own, else the default)
  tenant:mail:template:set --tenant ID --kind KIND --locale L (--subject TEXT --file BODY.txt | JSON)
                                                   save the tenant's own template, e.g. '{"subject":"Bravo {{name}}",
                                                   "body":"Bonjour {{name}},\n\n…"}' (checked first: an unknown
                                                   variable is refused with its line and column)
  tenant:mail:template:preview --tenant ID --kind KIND --locale L (--subject TEXT --file BODY.txt | JSON)
                                                   render it with the kind's samples, without saving (--json: HTML too)
  tenant:mail:template:reset --tenant ID --kind KIND --locale L
                                                   back to the default template
  app:create --tenant ID --name NAME [--scopes a,b] create an app; prints its API key once
  app:list --tenant ID                             list a tenant's apps (never their keys)
  app:rotate --app APP_ID                          issue a new key; the old one stops working at once
  app:revoke --app APP_ID                          revoke an app; its key stops working at once
  card:create --tenant ID --name NAME [--currency EUR] --cashback PCT [--min AMT] [--max AMT] [--pin]
            | --tenant ID --name NAME [--currency EUR] --points-ratio R [--referrer N] [--referee N]
              [--expiry-days N|never] [--pending-days N] [--warning-days N]
                                                   create a cashback or a points card (currency default USD);
                                                   credits expire N days after they become spendable (default
                                                   never), purchases wait N days to become spendable (default 0),
                                                   members are warned N days before an expiry (default 14)
  card:list --tenant ID                            list a tenant's cards
  card:update --tenant ID --card ID JSON           change a card's settings, e.g. '{"referrer_bonus":100}'
  card:update --tenant ID --card ID [--expiry-days N|never] [--pending-days N] [--warning-days N]
                                                   change its lifecycle (applies to credits made after the change)
  reward:create --tenant ID --card ID --name NAME --cost POINTS   add a reward to a points card
  reward:deactivate --tenant ID --card ID --reward ID             withdraw a reward
  rule:list --tenant ID --card ID                  a card's earning rules, in the order they run
  rule:create --tenant ID --card ID JSON           add an earning rule, e.g. '{"name":"x2","kind":"multiplier","factor":2,"status":"active"}'
  rule:get --tenant ID --card ID --rule ID         one rule with its versions
  rule:update --tenant ID --card ID --rule ID JSON change a rule (an active or paused one gets a new version)
  rule:activate|rule:pause|rule:delete --tenant ID --card ID --rule ID
                                                   activate, pause, or end a rule (delete removes a draft)
  tier:get --tenant ID --card ID                   a card's tier ladder, its qualification settings, members per tier
  tier:set --tenant ID --card ID JSON              replace the ladder and settings, e.g. '{"tiers":[{"name":"Bronze","rank":0,
                                                   "entry_threshold":0,"retain_threshold":0},{"name":"Gold","rank":1,
                                                   "entry_threshold":500,"retain_threshold":400}],"window":"calendar_year"}'
                                                   ('{"tiers":[]}' turns tiers off); prints the recompute job's id
  tier:member --tenant ID --card ID --member ID    a member's tier and progress
  tier:assign --tenant ID --card ID --member ID --tier NAME --until ISO --reason TEXT
                                                   set a member's tier by hand until a time (audited)
  staff:create --tenant ID --email EMAIL --role manager|staff [--name NAME]
                                                   create a staff user (the first manager); they sign in at /console
  staff:list --tenant ID                           list a tenant's staff users
  audit:verify --tenant ID [--anchor TOKEN]        verify the tenant's audit chain (keyed hashes, links, head, signed
                                                   anchors); exits 1 when a row was edited, deleted or the chain
                                                   rebuilt. --anchor: an anchor's token kept from the logs or the
                                                   audit.anchored webhook, which the chain must still hold
  webhook:create --tenant ID --url URL [--events a,b] [--description TEXT]
                                                   add a webhook endpoint (events default *); prints its secret once
  webhook:list --tenant ID                         list a tenant's webhook endpoints
  webhook:get --tenant ID --endpoint ID            one endpoint
  webhook:update --tenant ID --endpoint ID [--url URL] [--events a,b] [--description TEXT] [--enable | --disable]
                                                   change an endpoint; --disable gives up its pending deliveries
  webhook:delete --tenant ID --endpoint ID         delete an endpoint
  webhook:rotate-secret --tenant ID --endpoint ID  a new secret (printed once); the old one signs too for 24 h
  webhook:ping --tenant ID --endpoint ID           send a ping event now
  webhook:deliveries --tenant ID --endpoint ID [--status pending|delivered|failed] [--limit N]
                                                   an endpoint's delivery log, newest first
  webhook:redeliver --tenant ID --delivery ID      send a delivery again now
  import --tenant ID --kind members|balances|tiers|history --file F.csv|F.jsonl [--card ID] [--execute]
                                                   stream a file in (members; balances, tiers or past transactions
                                                   of a card), show the validation's progress and errors;
                                                   --execute imports it when valid
  export --tenant ID --entity journal|members|balances|lots --out FILE [--card ID] [--from T] [--to T]
         [--format csv|jsonl]                      stream a tenant's export into FILE as it is read (any size;
                                                   the format from FILE's extension unless given; T a date or
                                                   an ISO 8601 instant); FILE appears only once complete
  import:get --tenant ID --import IMPORT_ID        an import's status, counts and jobs
  import:execute --tenant ID --import IMPORT_ID    execute a validated import (a job)
  reports:rebuild --tenant ID [--card ID]          rebuild the report rollups of a tenant's cards from the journal
                                                   (a job; see job:get)
  job:get --job JOB_ID                             a job's status and progress (imports, rebuilds)
  tenant:deactivate --tenant ID [--reason TEXT]    deactivate a tenant: its apps get 403 tenant_inactive, its staff
                                                   cannot use the console, its webhooks pause (nothing is deleted)
  tenant:reactivate --tenant ID                    reactivate it (held webhook deliveries go out)
  tenant:export --tenant ID                        export all its data: one job per service (JSON Lines results)
  tenant:purge --tenant ID                         hard-delete it in every schema (one job per service); only once
                                                   it has been inactive for TENANT_PURGE_RETENTION_DAYS
  job:result --job ID                              print a succeeded job's result (e.g. an export's JSON Lines)
  call METHOD PATH [JSON]                          any other operator call, e.g. call GET /admin/v1/tenants
  help, --help, -h                                 this text
`;

/** Thrown for a wrong command line: the message and the usage go to stderr, exit code 2. */
class UsageError extends Error {}

const options = {
  name: { type: 'string' },
  sandbox: { type: 'boolean', default: false },
  tenant: { type: 'string' },
  scopes: { type: 'string' },
  app: { type: 'string' },
  card: { type: 'string' },
  reward: { type: 'string' },
  rule: { type: 'string' },
  member: { type: 'string' },
  tier: { type: 'string' },
  until: { type: 'string' },
  reason: { type: 'string' },
  currency: { type: 'string' },
  cashback: { type: 'string' },
  min: { type: 'string' },
  max: { type: 'string' },
  pin: { type: 'boolean', default: false },
  'points-ratio': { type: 'string' },
  referrer: { type: 'string' },
  referee: { type: 'string' },
  cost: { type: 'string' },
  'expiry-days': { type: 'string' },
  'pending-days': { type: 'string' },
  'warning-days': { type: 'string' },
  email: { type: 'string' },
  role: { type: 'string' },
  'contact-email': { type: 'string' },
  url: { type: 'string' },
  events: { type: 'string' },
  description: { type: 'string' },
  endpoint: { type: 'string' },
  delivery: { type: 'string' },
  status: { type: 'string' },
  limit: { type: 'string' },
  anchor: { type: 'string' },
  job: { type: 'string' },
  kind: { type: 'string' },
  locale: { type: 'string' },
  subject: { type: 'string' },
  file: { type: 'string' },
  entity: { type: 'string' },
  out: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  format: { type: 'string' },
  import: { type: 'string' },
  execute: { type: 'boolean', default: false },
  enable: { type: 'boolean', default: false },
  disable: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

/** Positional arguments are named in capitals (JSON, METHOD, PATH); anything else is a flag. */
const POSITIONAL = /^[A-Z]+$/;

function need(value: string | undefined, flag: string): string {
  if (value) return value;
  if (POSITIONAL.test(flag)) throw new UsageError(`missing the ${flag} argument`);
  throw new UsageError(`missing ${flag.startsWith('--') ? flag : `--${flag}`}`);
}

/** A flag's value as one segment of a path (`--tenant ../x` cannot name another route). */
const segment = (value: string | undefined, flag: string) => encodeURIComponent(need(value, flag));

/** A local file to stream: one that is missing, unreadable or not a file is a wrong command line. */
function localFile(path: string, flag = 'file'): string {
  try {
    accessSync(path, constants.R_OK);
    if (!statSync(path).isFile()) throw new Error('not a file');
  } catch (err) {
    throw new UsageError(`cannot read --${flag} ${path}: ${(err as Error).message}`);
  }
  return path;
}

/** A local file's text; one that cannot be read is a wrong command line, not the API's refusal. */
export function readLocalFile(path: string, flag = 'file'): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --${flag} ${path}: ${(err as Error).message}`);
  }
}

function number(value: string, flag: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${flag} must be a number (got "${value}")`);
  return n;
}

function json(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} is not valid JSON: ${text}`);
  }
}

/** How many positional arguments (after the command) each command takes; the others take none. */
const POSITIONALS: Record<string, number> = {
  'card:update': 1,
  'rule:create': 1,
  'rule:update': 1,
  'tier:set': 1,
  'tenant:mail:set': 1,
  'tenant:mail:template:set': 1,
  'tenant:mail:template:preview': 1,
  call: 3,
};

/** The request a command line stands for. */
function requestOf(
  command: string | undefined,
  rest: string[],
  v: Values,
  env: Record<string, string | undefined> = {},
): { method: string; path: string; body?: unknown } {
  const tenantPath = () => `/admin/v1/tenants/${segment(v.tenant, 'tenant')}`;
  const endpointPath = () => `${tenantPath()}/webhooks/endpoints/${segment(v.endpoint, 'endpoint')}`;
  const list = (text: string) =>
    text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  switch (command) {
    case 'tenant:create':
      return {
        method: 'POST',
        path: '/admin/v1/tenants',
        body: {
          name: need(v.name, 'name'),
          sandbox: v.sandbox,
          ...(v['contact-email'] ? { contact_email: v['contact-email'] } : {}),
        },
      };
    case 'tenant:list':
      return { method: 'GET', path: '/admin/v1/tenants' };
    case 'tenant:deactivate':
      return { method: 'POST', path: `${tenantPath()}/deactivate`, body: v.reason ? { reason: v.reason } : {} };
    case 'tenant:reactivate':
    case 'tenant:export':
    case 'tenant:purge':
      return { method: 'POST', path: `${tenantPath()}/${command.slice('tenant:'.length)}` };
    case 'job:result':
      return { method: 'GET', path: `/admin/v1/jobs/${encodeURIComponent(need(v.job, 'job'))}/result` };
    case 'tenant:update': {
      const email = need(v['contact-email'], 'contact-email');
      return { method: 'PATCH', path: tenantPath(), body: { contact_email: email === 'none' ? null : email } };
    }
    case 'app:create': {
      const scopes = (v.scopes ?? '').split(',').map((s) => s.trim());
      return {
        method: 'POST',
        path: `${tenantPath()}/apps`,
        body: { name: need(v.name, 'name'), scopes: scopes.filter(Boolean) },
      };
    }
    case 'app:list':
      return { method: 'GET', path: `${tenantPath()}/apps` };
    case 'app:rotate':
      return { method: 'POST', path: `/admin/v1/apps/${encodeURIComponent(need(v.app, 'app'))}/rotate-key` };
    case 'app:revoke':
      return { method: 'POST', path: `/admin/v1/apps/${encodeURIComponent(need(v.app, 'app'))}/revoke` };
    case 'card:create':
      return { method: 'POST', path: `${tenantPath()}/cards`, body: cardBody(v) };
    case 'card:list':
      return { method: 'GET', path: `${tenantPath()}/cards` };
    case 'card:update': {
      const lifecycle = lifecycleOf(v);
      return {
        method: 'POST',
        path: `${tenantPath()}/cards/${segment(v.card, 'card')}`,
        body:
          rest[0] !== undefined || Object.keys(lifecycle).length === 0
            ? json(need(rest[0], 'JSON'), 'JSON')
            : lifecycle,
      };
    }
    case 'reward:create':
      return {
        method: 'POST',
        path: `${tenantPath()}/cards/${segment(v.card, 'card')}/rewards`,
        body: { name: need(v.name, 'name'), points_cost: number(need(v.cost, 'cost'), 'cost') },
      };
    case 'reward:deactivate':
      return {
        method: 'POST',
        path: `${tenantPath()}/cards/${segment(v.card, 'card')}/rewards/${segment(v.reward, 'reward')}`,
        body: { active: false },
      };
    case 'rule:list':
    case 'rule:create':
    case 'rule:get':
    case 'rule:update':
    case 'rule:activate':
    case 'rule:pause':
    case 'rule:delete':
      return ruleRequest(command, `${tenantPath()}/cards/${segment(v.card, 'card')}/rules`, rest, v);
    case 'tier:get':
      return { method: 'GET', path: `${tenantPath()}/cards/${segment(v.card, 'card')}/tiers` };
    case 'tenant:mail':
      return { method: 'GET', path: `${tenantPath()}/mail` };
    case 'tenant:mail:set': {
      const body = json(need(rest[0], 'JSON'), 'JSON');
      // A password kept out of the command line (and the shell's history): SMTP_PASSWORD.
      const password = env.SMTP_PASSWORD;
      if (password && typeof body === 'object' && body !== null && 'smtp' in body) {
        const smtp = body.smtp;
        if (typeof smtp === 'object' && smtp !== null && !('password' in smtp))
          return { method: 'PUT', path: `${tenantPath()}/mail`, body: { ...body, smtp: { ...smtp, password } } };
      }
      return { method: 'PUT', path: `${tenantPath()}/mail`, body };
    }
    case 'tenant:mail:templates':
    case 'tenant:mail:template':
    case 'tenant:mail:template:set':
    case 'tenant:mail:template:preview':
    case 'tenant:mail:template:reset':
      return templateRequest(command, `${tenantPath()}/mail/templates`, rest, v);
    case 'tier:set':
      return {
        method: 'PUT',
        path: `${tenantPath()}/cards/${segment(v.card, 'card')}/tiers`,
        body: json(need(rest[0], 'JSON'), 'JSON'),
      };
    case 'tier:member':
      return {
        method: 'GET',
        path: `${tenantPath()}/cards/${segment(v.card, 'card')}/members/${segment(v.member, 'member')}/tier`,
      };
    case 'tier:assign':
      return {
        method: 'PUT',
        path: `${tenantPath()}/cards/${segment(v.card, 'card')}/members/${segment(v.member, 'member')}/tier`,
        body: { tier: need(v.tier, 'tier'), valid_until: need(v.until, 'until'), reason: need(v.reason, 'reason') },
      };
    case 'staff:create':
      return {
        method: 'POST',
        path: `${tenantPath()}/staff`,
        body: { email: need(v.email, 'email'), role: need(v.role, 'role'), ...(v.name ? { name: v.name } : {}) },
      };
    case 'staff:list':
      return { method: 'GET', path: `${tenantPath()}/staff` };
    case 'audit:verify':
      return {
        method: 'GET',
        path: `${tenantPath()}/audit/verify${v.anchor ? `?anchor=${encodeURIComponent(v.anchor)}` : ''}`,
      };
    case 'webhook:create':
      return {
        method: 'POST',
        path: `${tenantPath()}/webhooks/endpoints`,
        body: {
          url: need(v.url, 'url'),
          event_types: list(v.events ?? '*'),
          ...(v.description !== undefined ? { description: v.description } : {}),
        },
      };
    case 'webhook:list':
      return { method: 'GET', path: `${tenantPath()}/webhooks/endpoints` };
    case 'webhook:get':
      return { method: 'GET', path: endpointPath() };
    case 'webhook:update': {
      if (v.enable && v.disable) throw new UsageError('--enable and --disable exclude each other');
      return {
        method: 'PATCH',
        path: endpointPath(),
        body: {
          ...(v.url !== undefined ? { url: v.url } : {}),
          ...(v.events !== undefined ? { event_types: list(v.events) } : {}),
          ...(v.description !== undefined ? { description: v.description } : {}),
          ...(v.enable ? { enabled: true } : v.disable ? { enabled: false } : {}),
        },
      };
    }
    case 'webhook:delete':
      return { method: 'DELETE', path: endpointPath() };
    case 'webhook:rotate-secret':
      return { method: 'POST', path: `${endpointPath()}/rotate-secret` };
    case 'webhook:ping':
      return { method: 'POST', path: `${endpointPath()}/ping` };
    case 'webhook:deliveries': {
      const query = new URLSearchParams({
        ...(v.status ? { status: v.status } : {}),
        ...(v.limit ? { limit: String(number(v.limit, 'limit')) } : {}),
      }).toString();
      return { method: 'GET', path: `${endpointPath()}/deliveries${query ? `?${query}` : ''}` };
    }
    case 'webhook:redeliver':
      return {
        method: 'POST',
        path: `${tenantPath()}/webhooks/deliveries/${segment(v.delivery, 'delivery')}/redeliver`,
      };
    case 'reports:rebuild':
      return {
        method: 'POST',
        path: `${tenantPath()}/reports/rebuild`,
        body: v.card ? { card_id: number(v.card, 'card') } : {},
      };
    case 'import:get':
      return { method: 'GET', path: `${tenantPath()}/imports/${encodeURIComponent(need(v.import, 'import'))}` };
    case 'import:execute':
      return {
        method: 'POST',
        path: `${tenantPath()}/imports/${encodeURIComponent(need(v.import, 'import'))}/execute`,
      };
    case 'job:get':
      return { method: 'GET', path: `/admin/v1/jobs/${encodeURIComponent(need(v.job, 'job'))}` };
    case 'call': {
      const [method, path, body] = rest;
      const verb = need(method, 'METHOD').toUpperCase();
      if (!need(path, 'PATH').startsWith('/')) throw new UsageError(`PATH must start with / (got "${path}")`);
      return {
        method: verb,
        path: path!,
        body: body ? json(body, 'JSON') : undefined,
      };
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"` : 'no command given');
  }
}

/** The earning rule commands: the card's rules path, the rule by --rule, a JSON body where one is needed. */
function ruleRequest(command: string, rules: string, rest: string[], v: Values) {
  const one = () => `${rules}/${segment(v.rule, 'rule')}`;
  switch (command) {
    case 'rule:list':
      return { method: 'GET', path: rules };
    case 'rule:create':
      return { method: 'POST', path: rules, body: json(need(rest[0], 'JSON'), 'JSON') };
    case 'rule:get':
      return { method: 'GET', path: one() };
    case 'rule:update':
      return { method: 'PATCH', path: one(), body: json(need(rest[0], 'JSON'), 'JSON') };
    case 'rule:delete':
      return { method: 'DELETE', path: one() };
    default:
      return { method: 'POST', path: `${one()}/${command === 'rule:activate' ? 'activate' : 'pause'}` };
  }
}

/** The mail template commands: a kind and language by --kind and --locale, the text as JSON or --subject and --file. */
function templateRequest(command: string, templates: string, rest: string[], v: Values) {
  if (command === 'tenant:mail:templates') return { method: 'GET', path: templates };
  const one = `${templates}/${encodeURIComponent(need(v.kind, 'kind'))}/${encodeURIComponent(need(v.locale, 'locale'))}`;
  const text = () =>
    rest[0] !== undefined
      ? json(rest[0], 'JSON')
      : { subject: need(v.subject, 'subject'), body: readLocalFile(need(v.file, 'file')) };
  switch (command) {
    case 'tenant:mail:template:set':
      return { method: 'PUT', path: one, body: text() };
    case 'tenant:mail:template:preview':
      return { method: 'POST', path: `${one}/preview`, body: text() };
    case 'tenant:mail:template:reset':
      return { method: 'DELETE', path: one };
    default:
      return { method: 'GET', path: one };
  }
}

/** The lifecycle flags given (expiry, pending period, warning), as card settings. */
function lifecycleOf(v: Values) {
  const expiry = v['expiry-days'];
  return {
    ...(expiry !== undefined ? { expiry_days: expiry === 'never' ? null : number(expiry, 'expiry-days') } : {}),
    ...(v['pending-days'] !== undefined ? { pending_days: number(v['pending-days'], 'pending-days') } : {}),
    ...(v['warning-days'] !== undefined ? { expiry_warning_days: number(v['warning-days'], 'warning-days') } : {}),
  };
}

function cardBody(v: Values) {
  const base = {
    name: need(v.name, 'name'),
    ...(v.currency ? { currency: v.currency } : {}),
    referrer_bonus: number(v.referrer ?? '0', 'referrer'),
    referee_bonus: number(v.referee ?? '0', 'referee'),
    ...lifecycleOf(v),
  };
  if (v.cashback !== undefined) {
    return {
      ...base,
      reward_system: 'cashback',
      cashback_config: {
        cashback_percentage: number(v.cashback, 'cashback'),
        cashback_min_amount: number(v.min ?? '0', 'min'),
        cashback_max_amount: v.max === undefined ? null : number(v.max, 'max'),
        allows_pin_redemption: v.pin,
      },
    };
  }
  return {
    ...base,
    reward_system: 'points',
    points_ratio: number(need(v['points-ratio'], '--points-ratio or --cashback'), 'points-ratio'),
  };
}

const cell = (value: unknown): string =>
  value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);

/** Rows as an aligned text table with the given columns (every key of the first row when none). */
export function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(none)';
  const columns = Object.keys(rows[0]!);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(columns),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(columns.map((c) => cell(r[c])))),
  ].join('\n');
}

/**
 * The human form of a response's data: a table for its list, `field: value` lines for one object;
 * the fields beside a list (a ladder's settings and its recompute job, a rule beside its versions,
 * a page's cursor) follow its table.
 */
export function human(data: unknown): string {
  if (!data || typeof data !== 'object') return cell(data);
  const entries = Object.entries(data as Record<string, unknown>);
  const list = entries.find(([, v]) => Array.isArray(v));
  const lines: string[] = [];
  for (const [key, value] of entries) {
    if (list && key === list[0]) continue;
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) lines.push(`${k}: ${cell(v)}`);
    } else lines.push(`${key}: ${cell(value)}`);
  }
  if (!list) return lines.join('\n');
  const rows = table(list[1] as Record<string, unknown>[]);
  return lines.length === 0 ? rows : `${rows}\n\n${lines.join('\n')}`;
}

interface Verification {
  valid: boolean;
  rows_checked: number;
  head: { seq: number; hash: string };
  problem: { seq: number; reason: string } | null;
  legacy_rows: number;
  keyed_from: number | null;
  erased_details?: number;
  anchors_checked: number;
}

/** audit:verify's verdict: exit 0 for an intact chain, 1 naming the first row that does not verify. */
function auditVerdict(v: Verification, json: boolean, io: CliIo): number {
  if (json) io.out(JSON.stringify(v, null, 2));
  else if (v.valid) {
    io.out(`audit chain intact: ${v.rows_checked} rows verified, head ${v.head.seq} (${v.head.hash})`);
    const keyed = v.keyed_from === null ? 'no keyed rows yet' : `keyed from row ${v.keyed_from}`;
    const legacy = v.legacy_rows > 0 ? `, ${v.legacy_rows} rows from before the chain was keyed (SHA-256 only)` : '';
    const erased = v.erased_details ? `, ${v.erased_details} rows with details erased (personal data)` : '';
    io.out(`  ${keyed}${legacy}${erased}; ${v.anchors_checked} signed anchors matched`);
  } else io.err(`audit chain BROKEN at row ${v.problem!.seq}: ${v.problem!.reason} (${v.rows_checked} rows read)`);
  return v.valid ? 0 : 1;
}

/** LOYALTY_URL without its trailing slash; one that is not an http(s) URL is a wrong command line. */
export function baseUrlOf(env: Record<string, string | undefined>): string {
  const url = (env.LOYALTY_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
    throw new UsageError(`LOYALTY_URL is not an http(s) URL: "${url}"`);
  return url;
}

/** An answer that is not the API's JSON envelope (LOYALTY_URL names something else than the gateway). */
class NotAnEnvelope extends Error {}

/** The API's envelope of an answer; anything else says what came back instead. */
async function envelopeOf(
  res: Response,
): Promise<{ success: boolean; data?: unknown; error?: { code: string; message: string } }> {
  const text = await res.text();
  try {
    const answer = JSON.parse(text) as unknown;
    if (typeof answer === 'object' && answer !== null && 'success' in answer) return answer as never;
  } catch {
    // not JSON: said below
  }
  throw new NotAnEnvelope(
    `the operator API answered ${res.status} (${res.headers.get('content-type') ?? 'no content type'}), not its JSON envelope: is LOYALTY_URL the gateway?`,
  );
}

export interface CliIo {
  env: Record<string, string | undefined>;
  out: (text: string) => void;
  err: (text: string) => void;
  fetch: typeof fetch;
  /** Where `import` draws its progress bar (a terminal's stderr). */
  progress?: (line: string) => void;
}

/** Runs one command line; answers the process exit code (0 done, 1 the API refused, 2 a wrong command line). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options, strict: true });
    const [command, ...rest] = positionals;
    if (values.help || command === 'help') {
      io.out(usage);
      return 0;
    }
    if (command === 'import') {
      if (!io.env.OPERATOR_TOKEN) throw new UsageError('OPERATOR_TOKEN is not set');
      baseUrlOf(io.env);
      const opts = {
        tenant: segment(values.tenant, 'tenant'),
        kind: need(values.kind, 'kind'),
        file: localFile(need(values.file, 'file')),
        card: values.card,
        execute: values.execute,
        json: values.json,
      };
      return await runImport(opts, { ...io, progress: io.progress });
    }
    if (command === 'export') {
      if (!io.env.OPERATOR_TOKEN) throw new UsageError('OPERATOR_TOKEN is not set');
      baseUrlOf(io.env);
      const opts = {
        tenant: segment(values.tenant, 'tenant'),
        entity: need(values.entity, 'entity'),
        out: need(values.out, 'out'),
        card: values.card,
        from: values.from,
        to: values.to,
        format: values.format,
        json: values.json,
      };
      return await runExport(opts, { ...io, progress: io.progress });
    }
    const request = requestOf(command, rest, values, io.env);
    const extra = rest.slice(POSITIONALS[command ?? ''] ?? 0);
    if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}" for ${command}`);
    const token = io.env.OPERATOR_TOKEN;
    if (!token) throw new UsageError('OPERATOR_TOKEN is not set');
    const baseUrl = baseUrlOf(io.env);
    const res = await io.fetch(`${baseUrl}${request.path}`, {
      method: request.method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(request.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
    });
    // A job's result is the stored bytes (an export's JSON Lines), not the envelope.
    if (command === 'job:result' && res.ok) {
      io.out((await res.text()).replace(/\n$/, ''));
      return 0;
    }
    const answer = await envelopeOf(res);
    if (!answer.success) {
      io.err(
        values.json
          ? JSON.stringify(answer.error, null, 2)
          : `error ${res.status} ${answer.error?.code}: ${answer.error?.message}`,
      );
      return 1;
    }
    if (command === 'audit:verify') return auditVerdict(answer.data as Verification, values.json, io);
    io.out(values.json ? JSON.stringify(answer.data, null, 2) : human(answer.data));
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`${(err as Error).message}\n\n${usage}`);
      return 2;
    }
    if (err instanceof NotAnEnvelope) {
      io.err(err.message);
      return 1;
    }
    io.err(`cannot reach the operator API: ${(err as Error).message}`);
    return 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const code = await runCli(process.argv.slice(2), {
    env: process.env,
    out: (t) => console.log(t),
    err: (t) => console.error(t),
    fetch,
    progress: process.stderr.isTTY ? (line) => process.stderr.write(`\r${line}`) : undefined,
  });
  process.exit(code);
}
