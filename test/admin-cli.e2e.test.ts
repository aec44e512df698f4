import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, usage } from '../scripts/admin-cli.ts';
import { OPERATOR_TOKEN, startTestSystem, type TestSystem } from './support/system.ts';
import { WebhookReceiver } from './support/webhook-receiver.ts';

let sys: TestSystem;

/** Runs the CLI against the test system's gateway; collects what it prints. */
async function cli(args: string[], env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, {
    env: { LOYALTY_URL: sys.url, OPERATOR_TOKEN, ...env },
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    fetch,
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'webhooks'] });
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
  await sys?.stop();
});
const receiver = new WebhookReceiver();

describe('loyalty-admin', () => {
  it('--help, -h and help print the usage and exit 0; a wrong command line prints it to stderr with 2', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      expect(await cli(args)).toEqual({ code: 0, out: usage, err: '' });
    }
    const unknownFlag = await cli(['tenant:list', '--bogus']);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.err).toContain('--bogus');
    expect(unknownFlag.err).toContain('Usage: loyalty-admin');
    expect(unknownFlag.err).not.toMatch(/\n\s+at /); // no stack trace
    expect((await cli(['nope'])).err).toContain('unknown command "nope"');
    expect((await cli(['card:update', '--tenant', '1', '--card', '2', '{bad'])).code).toBe(2);
    expect((await cli(['tenant:list'], { OPERATOR_TOKEN: undefined })).err).toContain('OPERATOR_TOKEN is not set');
  });

  it('a wrong argument, an unreadable file or an answer that is not the API is a clear error, never a stack trace', async () => {
    const wrong = async (args: string[], message: string, code = 2, env: Record<string, string> = {}) => {
      const r = await cli(args, env);
      expect(r, args.join(' ')).toMatchObject({ code, out: '' });
      expect(r.err.split('\n')[0], args.join(' ')).toContain(message);
      expect(r.err).not.toMatch(/\n\s+at /);
      expect(r.err).not.toContain('cannot reach the operator API');
    };
    await wrong(['card:update', '--tenant', '1', '--card', '2'], 'missing the JSON argument');
    await wrong(['call', 'GET'], 'missing the PATH argument');
    await wrong(['call', 'GET', 'admin/v1/tenants'], 'PATH must start with /');
    await wrong(['tenant:list', 'extra'], 'unexpected argument "extra" for tenant:list');
    await wrong(['tier:set', '--tenant', '1', '--card', '1', '{}', '{}'], 'unexpected argument "{}" for tier:set');
    const missing = '/nonexistent/template.txt';
    const template = [
      '--tenant',
      '1',
      '--kind',
      'claim_approved',
      '--locale',
      'en',
      '--subject',
      'Hi',
      '--file',
      missing,
    ];
    await wrong(['tenant:mail:template:set', ...template], `cannot read --file ${missing}`);
    await wrong(['import', '--tenant', '1', '--kind', 'members', '--file', missing], `cannot read --file ${missing}`);
    await wrong(['import', '--tenant', '1', '--kind', 'members', '--file', '/tmp'], 'cannot read --file /tmp');
    await wrong(['tenant:list'], 'LOYALTY_URL is not an http(s) URL', 2, { LOYALTY_URL: 'not a url' });
    // The console's HTML is not the API's envelope: said as such, exit 1.
    await wrong(['call', 'GET', '/console'], 'not its JSON envelope: is LOYALTY_URL the gateway?', 1);
    // A flag's value is one segment of the path: it cannot reach another route.
    await wrong(['card:list', '--tenant', '../../../api/v1/x'], 'error 400 validation_error', 1);
  });

  it('prints field lines and tables by default, the data as JSON with --json', async () => {
    const created = await cli(['tenant:create', '--name', 'CLI Coffee', '--sandbox']);
    expect(created.code).toBe(0);
    expect(created.out).toMatch(/^id: \d+$/m);
    expect(created.out).toContain('name: CLI Coffee');
    const tenantId = /^id: (\d+)$/m.exec(created.out)![1]!;

    const card = await cli([
      'card:create',
      '--tenant',
      tenantId,
      '--name',
      'Euro back',
      '--currency',
      'EUR',
      '--cashback',
      '5',
      '--json',
    ]);
    expect(card.code, card.err).toBe(0);
    expect(JSON.parse(card.out)).toMatchObject({
      card: { name: 'Euro back', currency: 'EUR', reward_system: 'cashback' },
    });

    const list = await cli(['card:list', '--tenant', tenantId]);
    const [header, rule, row] = list.out.split('\n');
    expect(header).toMatch(/^id\s+tenant_id\s+unique_identifier\s+name/);
    expect(rule).toMatch(/^-+\s+-+/);
    expect(row).toContain('Euro back');
    expect(row).toContain('EUR');
  });

  it("sets and changes a card's lifecycle with flags", async () => {
    const created = await cli(['tenant:create', '--name', 'CLI Lots']);
    const tenantId = /^id: (\d+)$/m.exec(created.out)![1]!;
    const card = await cli(
      ['card:create', '--tenant', tenantId, '--name', 'Expiring', '--points-ratio', '1'].concat([
        '--expiry-days',
        '365',
        '--pending-days',
        '14',
        '--warning-days',
        '30',
        '--json',
      ]),
    );
    expect(card.code, card.err).toBe(0);
    const { card: c } = JSON.parse(card.out) as { card: { id: number } };
    expect(c).toMatchObject({ expiry_days: 365, pending_days: 14, expiry_warning_days: 30 });
    const updated = await cli([
      'card:update',
      '--tenant',
      tenantId,
      '--card',
      String(c.id),
      '--expiry-days',
      'never',
      '--json',
    ]);
    expect(JSON.parse(updated.out)).toMatchObject({ card: { expiry_days: null, pending_days: 14 } });
    const refused = await cli(['card:update', '--tenant', tenantId, '--card', String(c.id), '--pending-days=-2']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^error 400 validation_error: /);
    expect(
      (await cli(['card:create', '--tenant', tenantId, '--name', 'x', '--points-ratio', '1', '--expiry-days', 'soon']))
        .code,
    ).toBe(2);
  });

  it("creates a tenant's first manager and verifies its audit chain", async () => {
    const tenantId = /^id: (\d+)$/m.exec((await cli(['tenant:create', '--name', 'Staffed'])).out)![1]!;
    const created = await cli([
      'staff:create',
      '--tenant',
      tenantId,
      '--email',
      'Boss@Example.com',
      '--role',
      'manager',
    ]);
    expect(created.code, created.err).toBe(0);
    expect(created.out).toContain('email: boss@example.com');
    expect(created.out).toContain('role: manager');
    expect(
      (await cli(['staff:create', '--tenant', tenantId, '--email', 'boss@example.com', '--role', 'manager'])).err,
    ).toMatch(/^error 409 staff_email_taken/);
    expect((await cli(['staff:create', '--tenant', tenantId, '--email', 'x@example.com'])).code).toBe(2); // no --role
    const list = await cli(['staff:list', '--tenant', tenantId]);
    expect(list.out).toContain('boss@example.com');
    // The chain of the new tenant (tenant.created, staff.created) verifies once identity appended it.
    let verified = await cli(['audit:verify', '--tenant', tenantId]);
    for (let i = 0; i < 100 && !/2 rows verified/.test(verified.out); i++) {
      await new Promise((r) => setTimeout(r, 100));
      verified = await cli(['audit:verify', '--tenant', tenantId]);
    }
    expect(verified).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^audit chain intact: 2 rows verified, head 2 /),
    });
  });

  it('an API refusal is printed with its code and exits 1', async () => {
    const missing = await cli(['app:rotate', '--app', 'app_nope']);
    expect(missing).toMatchObject({ code: 1, out: '' });
    expect(missing.err).toMatch(/^error 404 app_not_found: /);
  });

  it("manages a tenant's contact and webhook endpoints", async () => {
    const created = await cli([
      'tenant:create',
      '--name',
      'Hooked',
      '--sandbox',
      '--contact-email',
      'it@hooked.example',
    ]);
    expect(created.out).toContain('contact_email: it@hooked.example');
    const tenant = /^id: (\d+)$/m.exec(created.out)![1]!;
    expect((await cli(['tenant:update', '--tenant', tenant, '--contact-email', 'none'])).out).toContain(
      'contact_email: \n',
    );
    const endpoint = await cli([
      'webhook:create',
      '--tenant',
      tenant,
      '--url',
      receiver.url('/cli'),
      '--events',
      'points.earned,ping',
      '--json',
    ]);
    expect(endpoint.code, endpoint.err).toBe(1); // `ping` is not a type to ask for: it is always sent on request
    expect(endpoint.err).toContain('validation_error');
    const made = await cli([
      'webhook:create',
      '--tenant',
      tenant,
      '--url',
      receiver.url('/cli'),
      '--description',
      'till',
      '--json',
    ]);
    expect(made.code, made.err).toBe(0);
    const { endpoint: ep } = JSON.parse(made.out) as {
      endpoint: { id: number; secret: string; event_types: string[] };
    };
    expect(ep.event_types).toEqual(['*']);
    expect(ep.secret).toMatch(/^whsec_/);
    const id = String(ep.id);
    const list = await cli(['webhook:list', '--tenant', tenant]);
    expect(list.out.split('\n')[0]).toMatch(/^id\s+url\s+description\s+event_types\s+enabled/);
    expect(
      (
        await cli([
          'webhook:update',
          '--tenant',
          tenant,
          '--endpoint',
          id,
          '--events',
          'claim.approved, claim.rejected',
        ])
      ).out,
    ).toContain('event_types: ["claim.approved","claim.rejected"]');
    expect((await cli(['webhook:ping', '--tenant', tenant, '--endpoint', id])).code).toBe(0);
    const [ping] = await receiver.waitFor((r) => r.path === '/cli');
    expect(ping!.event.type).toBe('ping');
    const log = await cli(['webhook:deliveries', '--tenant', tenant, '--endpoint', id, '--limit', '5', '--json']);
    const delivery = (JSON.parse(log.out) as { deliveries: { id: number }[] }).deliveries[0]!;
    expect((await cli(['webhook:redeliver', '--tenant', tenant, '--delivery', String(delivery.id)])).code).toBe(0);
    await receiver.waitFor((r) => r.path === '/cli', 2);
    const rotated = await cli(['webhook:rotate-secret', '--tenant', tenant, '--endpoint', id, '--json']);
    expect((JSON.parse(rotated.out) as { endpoint: { secret: string } }).endpoint.secret).not.toBe(ep.secret);
    expect((await cli(['webhook:update', '--tenant', tenant, '--endpoint', id, '--disable'])).out).toContain(
      'enabled: false',
    );
    expect((await cli(['webhook:update', '--tenant', tenant, '--endpoint', id, '--enable', '--disable'])).code).toBe(2);
    expect((await cli(['webhook:delete', '--tenant', tenant, '--endpoint', id])).out).toContain('deleted: true');
    const gone = await cli(['webhook:get', '--tenant', tenant, '--endpoint', id]);
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(/^error 404 webhook_endpoint_not_found/);
  });
  it("manages a card's earning rules and time zone", async () => {
    const tenant = /^id: (\d+)$/m.exec((await cli(['tenant:create', '--name', 'Rules'])).out)![1]!;
    const card = /^id: (\d+)$/m.exec(
      (await cli(['card:create', '--tenant', tenant, '--name', 'P', '--points-ratio', '1'])).out,
    )![1]!;
    const where = ['--tenant', tenant, '--card', card];
    expect((await cli(['card:update', ...where, '{"time_zone":"Europe/Lisbon"}'])).out).toContain(
      'time_zone: Europe/Lisbon',
    );
    const created = await cli(['rule:create', ...where, '{"name":"x2","kind":"multiplier","factor":2}', '--json']);
    expect(created.code, created.err).toBe(0);
    const id = String((JSON.parse(created.out) as { rule: { id: number } }).rule.id);
    expect((await cli(['rule:activate', ...where, '--rule', id])).out).toContain('status: active');
    expect((await cli(['rule:update', ...where, '--rule', id, '{"factor":3}'])).out).toContain('version: 2');
    expect((await cli(['rule:list', ...where])).out).toMatch(/^id\s+card_id\s+status/);
    expect((await cli(['rule:pause', ...where, '--rule', id])).out).toContain('status: paused');
    const bad = await cli(['rule:create', ...where, '{"name":"bad","kind":"multiplier","factor":0}']);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/^error 422 invalid_rule: .*factor/);
    expect((await cli(['rule:delete', ...where, '--rule', id])).out).toContain('status: ended');
    expect((await cli(['rule:get', ...where])).code).toBe(2);
  });

  it("sets a card's tiers, reads a member's tier and assigns one by hand", async () => {
    const t = await sys.tenant({ scopes: ['points_write'] });
    const tenant = String(t.tenantId);
    const card = /^id: (\d+)$/m.exec(
      (await cli(['card:create', '--tenant', tenant, '--name', 'P', '--points-ratio', '1'])).out,
    )![1]!;
    const where = ['--tenant', tenant, '--card', card];
    const ladder = {
      tiers: [
        { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
        { name: 'Gold', rank: 1, entry_threshold: 500, retain_threshold: 400 },
      ],
      window: 'calendar_year',
    };
    const set = await cli(['tier:set', ...where, JSON.stringify(ladder), '--json']);
    expect(set.code, set.err).toBe(0);
    expect(JSON.parse(set.out)).toMatchObject({ enabled: true, window: 'calendar_year', version: 1 });
    expect((await cli(['tier:get', ...where])).out).toMatch(/^Gold\s+1\s+500\s+400/m);
    // Without --json: the ladder's table, then its settings and (a change) the recompute job's id.
    const changed = await cli(['tier:set', ...where, JSON.stringify({ ...ladder, window: 'lifetime' })]);
    expect(changed.out).toMatch(/^Gold\s+1\s+500\s+400/m);
    expect(changed.out).toMatch(/^window: lifetime$/m);
    expect(changed.out).toMatch(/^recompute_job_id: job_ledger_\S+$/m);
    expect((await cli(['tier:get', ...where])).out).toMatch(/^version: 2$/m);
    const bad = await cli([
      'tier:set',
      ...where,
      '{"tiers":[{"name":"A","rank":0,"entry_threshold":5,"retain_threshold":0}]}',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/^error 422 invalid_tiers: .*entry_threshold/);
    const res = await fetch(`${sys.url}/api/v1/loyalty/points/earn`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-app-id': t.appId, 'x-api-key': t.apiKey },
      body: JSON.stringify({ card_id: Number(card), email: 'tiers-cli@example.com', purchase_amount: 10 }),
    });
    const member = String(((await res.json()) as { data: { member_id: number } }).data.member_id);
    expect((await cli(['tier:member', ...where, '--member', member, '--json'])).out).toContain('"Bronze"');
    const until = new Date(sys.clock.now().getTime() + 30 * 86_400_000).toISOString();
    const assigned = await cli([
      'tier:assign',
      ...where,
      '--member',
      member,
      '--tier',
      'Gold',
      '--until',
      until,
      '--reason',
      'VIP',
      '--json',
    ]);
    expect(assigned.code, assigned.err).toBe(0);
    expect(JSON.parse(assigned.out)).toMatchObject({ tier: { name: 'Gold' }, manual: { reason: 'VIP' } });
    expect((await cli(['tier:assign', ...where, '--member', member, '--tier', 'Gold'])).code).toBe(2);
  });
});
