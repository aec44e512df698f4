import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../scripts/bootstrap.mjs';
import { pointsCard, reward, signedIn } from '../support/ledger.ts';
import { eventually, signIn } from '../support/staff.ts';
import { apiClient, staffClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The console's programme pages in a real Chromium against the real stack (identity and the
 * ledger): a member's marketing consents and tiers, the members per tier and the ladder editor,
 * imports (validate, errors, the error file, execute) and the programme dashboard.
 * Screenshots go to var/screenshots/. Skipped, with a message, on a machine without Chromium
 * (as console.browser.test.ts).
 */
const CHROMIUM = chromiumPath();
if (!CHROMIUM)
  console.warn(
    'console programme browser tests SKIPPED: no Chromium found (install Debian/Ubuntu `chromium`, or set CHROMIUM_PATH)',
  );

const SHOTS = path.resolve(import.meta.dirname, '../../var/screenshots');

describe.skipIf(!CHROMIUM)('staff console: consents, tiers, imports, programme report (Chromium)', () => {
  let sys: TestSystem;
  let tenantId: number;
  let api: ReturnType<typeof apiClient>;
  let card: number;
  let managerEmail: string;
  let clerkToken: string;
  let managerToken: string;
  const members: { id: number; email: string; name: string }[] = [];
  let context: BrowserContext;
  let page: Page;
  let profile: string;

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  const status = () => page.getByRole('status').last();
  const heading = () => page.getByRole('heading', { level: 1 }).textContent();

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    sys = await startTestSystem({ services: ['identity', 'ledger'] });
    ({
      tenant: { id: tenantId },
    } = await sys.admin<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', {
      name: 'Corner Coffee',
      sandbox: true,
    }));
    const { app } = await sys.admin<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${tenantId}/apps`,
      { name: 'till', scopes: ['points_read', 'points_write', 'card_read', 'members_manage', 'programme_manage'] },
    );
    api = apiClient(sys.url, { appId: app.app_id, apiKey: app.api_key });
    ({
      card: { id: card },
    } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenantId}/cards`, {
      name: 'Coffee points',
      reward_system: 'points',
      points_ratio: 1,
    }));
    // The ladder before anyone earns: Bronze from 0, Silver from 100, Gold from 300 points.
    await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/cards/${card}/tiers`, {
      tiers: [
        { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
        { name: 'Silver', rank: 1, entry_threshold: 100, retain_threshold: 80 },
        { name: 'Gold', rank: 2, entry_threshold: 300, retain_threshold: 250 },
      ],
      metric: 'points_earned',
      window: 'rolling',
      window_days: 365,
    });
    const run = randomUUID().slice(0, 6);
    for (const [name, amount] of [
      ['Ana Silva', 180],
      ['Bruno Costa', 40],
    ] as const) {
      const email = `${name.split(' ')[0]!.toLowerCase()}.${run}@example.com`;
      const earn = await api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: card, email, member_name: name, purchase_amount: amount },
      });
      expect(earn.status, JSON.stringify(earn.body)).toBe(200);
      members.push({ id: earn.body.data!.member_id as number, email, name });
    }
    // Ana gave marketing email consent at the till.
    const consent = await api('PUT', `/api/v1/members/${members[0]!.id}/consents`, {
      body: { consents: [{ purpose: 'marketing_email', granted: true }], source: 'pos' },
    });
    expect(consent.status, JSON.stringify(consent.body)).toBe(200);
    managerEmail = `maria.${run}@cornercoffee.example`;
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, {
      email: managerEmail,
      name: 'Maria Lopez',
      role: 'manager',
    });
    const clerkEmail = `tom.${run}@cornercoffee.example`;
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, { email: clerkEmail, name: 'Tom', role: 'staff' });
    clerkToken = await signIn(staffClient(sys.url), tenantId, clerkEmail);
    managerToken = await signIn(staffClient(sys.url), tenantId, managerEmail);
    // The manager signs in again in the browser: past the code cooldown of the API sign-in above.
    sys.clock.advance(61_000);
    profile = mkdtempSync(path.join(tmpdir(), 'console-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM!,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1024, height: 768 },
      hasTouch: true,
    });
    page = context.pages()[0] ?? (await context.newPage());
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await sys?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('signs the manager in with the sandbox code', async () => {
    await page.goto(`${sys.url}/console/?tenant=${tenantId}`);
    await expect.poll(() => page.getByLabel('Merchant (tenant) number').inputValue()).toBe(String(tenantId));
    await page.getByLabel('Email').fill(managerEmail);
    await page.getByRole('button', { name: 'Send me a code' }).click();
    const code = (await page.getByTestId('sandbox-code').locator('strong').textContent())!;
    await page.getByLabel('One-time code').fill(code);
    await page.getByLabel('One-time code').press('Enter');
    await expect.poll(heading).toBe('Claims queue');
  });

  it("shows a member's marketing consents, and a manager records one (audited as the manager)", async () => {
    const ana = members[0]!;
    await page.goto(`${sys.url}/console/#/members/${ana.id}`);
    await expect.poll(heading).toBe(ana.name);
    const row = (purpose: string) => page.locator(`tr[data-consent="${purpose}"]`);
    await expect.poll(() => row('marketing_email').locator('.badge').textContent()).toBe('granted');
    expect(await row('marketing_email').locator('td').nth(3).textContent()).toBe('pos');
    expect(await row('marketing_sms').locator('.badge').textContent()).toBe('not given');
    expect(await row('marketing_sms').locator('td').nth(3).textContent()).toBe('—');

    await page.getByRole('button', { name: 'Grant Marketing SMS' }).click();
    await expect.poll(() => status().textContent()).toBe('Marketing SMS: granted.');
    await expect.poll(() => row('marketing_sms').locator('.badge').textContent()).toBe('granted');
    expect(await row('marketing_sms').locator('td').nth(3).textContent()).toBe('console');
    await page.getByRole('button', { name: 'Withdraw Marketing email' }).click();
    await expect.poll(() => row('marketing_email').locator('.badge').textContent()).toBe('withdrawn');
    expect(await row('marketing_email').locator('td').nth(2).textContent()).not.toBe('—'); // withdrawn at
    await shot('member-consents');

    // What the console showed is what the merchant API answers.
    const held = await api('GET', `/api/v1/members/${ana.id}/consents`);
    expect(held.body.data!.consents).toMatchObject([
      { purpose: 'marketing_email', granted: false, source: 'console' },
      { purpose: 'marketing_sms', granted: true, source: 'console' },
    ]);
    // The changes are in the audit log under the manager's name.
    const audited = await eventually(async () => {
      const r = await staffClient(sys.url)('GET', '/staff/v1/audit?action=consent.changed', { token: managerToken });
      const entries = r.body.data!.entries as {
        actor: { type: string; email?: string };
        target: { member_id?: number };
        details: Record<string, unknown>;
      }[];
      const byStaff = entries.filter((e) => e.actor.type === 'staff');
      return byStaff.length >= 2 ? byStaff : undefined;
    });
    expect(audited).toHaveLength(2);
    expect(audited.every((e) => e.actor.email === managerEmail && e.target.member_id === ana.id)).toBe(true);
    expect(audited.map((e) => e.details)).toEqual([
      { marketing_email: false, source: 'console' },
      { marketing_sms: true, source: 'console' },
    ]);

    // Staff (not managers) see the consents but may not change them.
    const staff = staffClient(sys.url);
    const seen = await staff('GET', `/staff/v1/members/${ana.id}/consents`, { token: clerkToken });
    expect(seen.status).toBe(200);
    const refused = await staff('PUT', `/staff/v1/members/${ana.id}/consents`, {
      token: clerkToken,
      body: { consents: [{ purpose: 'marketing_sms', granted: false }] },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error!.code).toBe('insufficient_role');
  });

  it("shows a member's tier with its progress bar towards the next tier", async () => {
    const ana = members[0]!;
    await expect.poll(() => page.getByTestId(`tier-${card}`).locator('.badge').textContent()).toBe('Silver');
    expect(await page.getByTestId(`tier-next-${card}`).textContent()).toBe('120 points to Gold');
    const bar = page.getByRole('progressbar', { name: 'Progress to Gold' });
    expect(await bar.getAttribute('value')).toBe('180');
    expect(await bar.getAttribute('max')).toBe('300');
    expect(await page.getByTestId(`tier-${card}`).textContent()).toMatch(/valid until/);
    // The same figures as the merchant API's tier answer.
    const tier = await api('GET', `/api/v1/loyalty/cards/${card}/members/${ana.id}/tier`);
    expect(tier.body.data).toMatchObject({ tier: { name: 'Silver' }, qualifying_total: 180, needed_for_next: 120 });
    await shot('member-tier');

    await page.goto(`${sys.url}/console/#/members/${members[1]!.id}`);
    await expect.poll(() => page.getByTestId(`tier-next-${card}`).textContent()).toBe('60 points to Silver');
  });

  it('counts the members per tier, and a manager edits the ladder', async () => {
    await page.getByRole('link', { name: 'Tiers' }).click();
    await expect.poll(heading).toBe('Tiers');
    const count = (tier: string) => page.locator(`[data-testid="tier-counts-${card}"] td[data-tier-members="${tier}"]`);
    await expect.poll(() => count('Bronze').textContent()).toBe('1');
    expect(await count('Silver').textContent()).toBe('1');
    expect(await count('Gold').textContent()).toBe('0');
    expect(await page.getByRole('img', { name: /Members per tier/ }).count()).toBe(1);
    await shot('tiers');

    // Gold from 150 instead of 300: Ana (180 points) moves up once the recompute has run.
    const version = () => page.locator('form.ladder p.muted').textContent();
    const before = (await version())!.match(/^Version \d+/)![0];
    await page.getByLabel('Tier 3 entry threshold').fill('150');
    await page.getByLabel('Tier 3 retain threshold').fill('120');
    await page.getByRole('button', { name: 'Save ladder' }).click();
    await expect.poll(() => status().textContent()).toMatch(/Saved: 3 tiers; every member is being recomputed/);
    // The form shows the new version once the ladder is reloaded, and the outcome stays on screen.
    await expect.poll(version).not.toMatch(new RegExp(`^${before},`));
    expect(await status().textContent()).toMatch(/Saved: 3 tiers/);
    await expect
      .poll(
        async () => {
          await page.getByRole('link', { name: 'Members' }).click();
          await page.getByRole('link', { name: 'Tiers' }).click();
          return count('Gold').textContent();
        },
        { timeout: 20_000 },
      )
      .toBe('1');
    expect(await count('Silver').textContent()).toBe('0');
    await shot('tiers-edited');
    // A ladder the ledger refuses (retain above entry) says why, and nothing changes.
    await page.getByLabel('Tier 2 retain threshold').fill('500');
    await page.getByRole('button', { name: 'Save ladder' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/invalid_tiers/);
    const settings = await api('GET', `/api/v1/loyalty/cards/${card}/tiers`);
    expect(settings.body.data!.tiers).toMatchObject([{}, { retain_threshold: 80 }, { entry_threshold: 150 }]);
  }, 90_000); // waits up to 20 s for the recompute job: vitest's 30 s cut it on a loaded machine

  it('imports members: validation with the first errors and the error file, then a corrected file executed', async () => {
    const run = randomUUID().slice(0, 6);
    const header = 'external_id,name,email,phone,joined_at,accepts_emails';
    const good = [
      `C-1,Carla Dias,carla.${run}@example.com,,2024-01-05,true`,
      `C-2,Dora Reis,dora.${run}@example.com,,2024-01-05,false`,
      `C-3,Eva Lima,eva.${run}@example.com,+351911000003,2024-01-05,false`,
      `C-4,Filipe Gomes,filipe.${run}@example.com,,2024-01-05,true`,
    ];
    const planted = [
      good[0],
      good[1]!.replace(`dora.${run}@example.com`, 'not-an-email'),
      `C-3,,eva.${run}@example.com,,2024-01-05,false`,
      good[3]!.replace(/true$/, 'maybe'),
    ];
    const choose = async (name: string, text: string, mimeType: string) => {
      await page.getByLabel('File (CSV or JSON Lines)').setInputFiles({ name, mimeType, buffer: Buffer.from(text) });
      await page.getByRole('button', { name: 'Upload and validate' }).click();
    };
    const importStatus = () => page.getByTestId('import-status').textContent();

    await page.getByRole('link', { name: 'Imports' }).click();
    await expect.poll(heading).toBe('Imports');
    await choose('members.csv', `${[header, ...planted].join('\n')}\n`, 'text/csv');
    await expect.poll(importStatus, { timeout: 20_000 }).toMatch(/^Invalid/);
    expect(await page.getByTestId('import-lines').textContent()).toBe('4');
    expect(await page.getByTestId('import-valid').textContent()).toBe('1');
    expect(await page.getByTestId('import-invalid').textContent()).toBe('3');
    // Line 1 is the header: the planted errors are on lines 3, 4 and 5.
    const errorRows = page.locator('tr[data-error-line]');
    expect(
      await errorRows.evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => c.textContent).slice(0, 2))),
    ).toEqual([
      ['3', 'email'],
      ['4', 'name'],
      ['5', 'accepts_emails'],
    ]);
    expect(await page.getByRole('button', { name: 'Execute the import' }).count()).toBe(0);
    await shot('imports-invalid');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download the error file' }).click(),
    ]);
    const errorFile = readFileSync(await download.path(), 'utf8')
      .trim()
      .split('\n');
    expect(errorFile[0]).toBe('line,column,reason');
    expect(errorFile.slice(1).map((l) => l.split(',').slice(0, 2).join(','))).toEqual([
      '3,email',
      '4,name',
      '5,accepts_emails',
    ]);

    // The corrected file validates and executes; its members exist.
    const corrected = `${[header, ...good].join('\n')}\n`;
    await choose('members.csv', corrected, 'text/csv');
    await expect.poll(importStatus, { timeout: 20_000 }).toBe('Valid: ready to execute');
    await page.getByRole('button', { name: 'Execute the import' }).click();
    await expect.poll(importStatus, { timeout: 20_000 }).toBe('Executed');
    expect(await page.getByTestId('import-applied').textContent()).toBe('4');
    expect(await page.getByRole('progressbar', { name: 'Execution' }).getAttribute('value')).toBe('4');
    await shot('imports-executed');
    const found = await staffClient(sys.url)('GET', `/staff/v1/members?email=eva.${run}%40example.com`, {
      token: managerToken,
    });
    expect(found.body.data!.member).toMatchObject({ name: 'Eva Lima', phone: '+351911000003' });

    // The same file again changes nothing.
    await choose('members.csv', corrected, 'text/csv');
    await expect.poll(importStatus, { timeout: 20_000 }).toBe('Valid: ready to execute');
    await page.getByRole('button', { name: 'Execute the import' }).click();
    await expect.poll(importStatus, { timeout: 20_000 }).toBe('Executed');
    expect(await page.getByTestId('import-applied').textContent()).toBe('0');
    expect(await page.getByTestId('import-unchanged').textContent()).toBe('4');

    // Balances (JSON Lines) on the points card: Carla's 250 points arrive.
    await page.getByLabel('What').selectOption('balances');
    await page.getByRole('combobox', { name: 'Card' }).selectOption(String(card));
    await choose(
      'balances.jsonl',
      `${JSON.stringify({ external_id: 'L-1', member_external_id: 'C-1', points: 250 })}\n`,
      'application/x-ndjson',
    );
    await expect.poll(importStatus, { timeout: 20_000 }).toBe('Valid: ready to execute');
    await page.getByRole('button', { name: 'Execute the import' }).click();
    await expect.poll(importStatus, { timeout: 20_000 }).toBe('Executed');
    const carla = await staffClient(sys.url)('GET', `/staff/v1/members?email=carla.${run}%40example.com`, {
      token: managerToken,
    });
    const carlaId = (carla.body.data!.member as { id: number }).id;
    const balance = await api('GET', `/api/v1/loyalty/points/balance?card_id=${card}&member_id=${carlaId}`);
    expect(balance.body.data!.points_balance).toBe(250);

    // Staff (not managers) may not import.
    const refused = await staffClient(sys.url)('GET', `/staff/v1/imports/imp_identity_${randomUUID()}`, {
      token: clerkToken,
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error!.code).toBe('insufficient_role');
  }, 120_000); // six waits of up to 20 s each for the import's jobs

  it("shows a card's programme report as a chart with its tables, and downloads it as CSV", async () => {
    // A card of its own with a point value: 300 points issued, 2 × 100 redeemed, 50 refunded.
    const shop = await pointsCard(sys, tenantId, { name: 'Shop points', point_value: 0.01 });
    const prize = await reward(sys, tenantId, shop, 100, { name: 'Free coffee' });
    const m = await signedIn(api);
    const earn = await api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: shop, member_id: m.id, purchase_amount: 300, reference: 'till-1' },
    });
    expect(earn.status, JSON.stringify(earn.body)).toBe(200);
    for (let i = 0; i < 2; i++) {
      const r = await api('POST', '/api/v1/loyalty/points/redeem', {
        token: m.token,
        body: { card_id: shop, reward_id: prize },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const refund = await api('POST', '/api/v1/loyalty/points/refund', {
      body: { card_id: shop, member_id: m.id, refund_amount: 50, reference: 'till-1' },
    });
    expect(refund.status, JSON.stringify(refund.body)).toBe(200);
    // The rollups are folded from the journal as it is written: the report has them shortly.
    const answer = await eventually(async () => {
      const r = await api('GET', `/api/v1/loyalty/cards/${shop}/report`);
      const data = r.body.data as { totals: { issued: number; refunded: number } } | undefined;
      return data && data.totals.issued === 300 ? r.body.data : undefined;
    }, 25_000);
    expect(answer).toMatchObject({
      totals: { issued: 300, redeemed: 200, refunded: 50, expired: 0, breakage: 0, active_members: 1 },
      outstanding: { balance: 50, liability: 0.5 },
      top_rewards: [{ reward_id: prize, name: 'Free coffee', redemptions: 2, amount: 200 }],
    });

    await page.getByRole('link', { name: 'Programme' }).click();
    await page.reload(); // the console loads the tenant's cards when it starts: the new card too
    await expect.poll(heading).toBe('Programme');
    await page.getByRole('combobox', { name: 'Card' }).selectOption(String(shop));
    const figure = (name: string) => page.locator(`[data-figure="${name}"]`).textContent();
    await expect.poll(() => figure('issued')).toBe('300');
    expect(await figure('redeemed')).toBe('200');
    expect(await figure('refunded')).toBe('50');
    expect(await figure('expired')).toBe('0');
    expect(await figure('outstanding')).toBe('50');
    expect(await figure('liability')).toMatch(/0\.50/);
    expect(await figure('breakage')).toBe('0.0 %');
    expect(await figure('redemption-rate')).toBe('66.7 %');
    expect(await figure('active-members')).toBe('1');
    const prizeRow = page.locator(`tr[data-reward="${prize}"]`);
    expect(await prizeRow.locator('th, td').allTextContents()).toEqual(['Free coffee', '2', '200']);
    // The chart: four series (issued, redeemed, expired, refunded), one group per day of the range.
    const periods = (answer as { periods: { start: string; issued: number }[] }).periods;
    expect(await page.getByRole('img', { name: /Issued, redeemed, expired and refunded per day/ }).count()).toBe(1);
    expect(await page.locator('svg rect.bar-a').count()).toBe(periods.length);
    expect(await page.locator('svg rect.bar-d').count()).toBe(periods.length);
    const busy = periods.find((p) => p.issued > 0)!;
    expect(await page.locator(`tr[data-period="${busy.start}"] td`).allTextContents()).toEqual([
      '300',
      '200',
      '0',
      '50',
      '0',
      '1',
    ]);
    await shot('programme');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    const csv = readFileSync(await download.path(), 'utf8')
      .trim()
      .split('\n');
    expect(csv[0]).toBe('period_start,issued,redeemed,expired,refunded,adjusted,active_members');
    expect(csv).toHaveLength(periods.length + 1);
    expect(csv).toContain(`${busy.start},300,200,0,50,0,1`);

    // Per month: one period holds it all.
    await page.getByRole('combobox', { name: 'Per' }).selectOption('month');
    await expect.poll(() => page.getByRole('img', { name: /per month/ }).count()).toBe(1);
    expect(await figure('issued')).toBe('300');

    // Staff (not managers) get no report.
    const refused = await staffClient(sys.url)('GET', `/staff/v1/cards/${shop}/report`, { token: clerkToken });
    expect(refused.status).toBe(403);
    expect(refused.body.error!.code).toBe('insufficient_role');
  }, 90_000);
});
