import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../scripts/bootstrap.mjs';
import { eventually, signIn } from '../support/staff.ts';
import { apiClient, staffClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * A manager sets a member's tier by hand on the member page, in a real Chromium against the real
 * stack (identity and the ledger): the new tier and its progress show at once from the ledger's
 * answer, a refusal shows the server's message, and staff who are not managers get no form (and
 * the API refuses them). Screenshots go to var/screenshots/. Skipped, with a message, on a machine
 * without Chromium (as console.browser.test.ts).
 */
const CHROMIUM = chromiumPath();
if (!CHROMIUM)
  console.warn(
    'console member tier browser tests SKIPPED: no Chromium found (install Debian/Ubuntu `chromium`, or set CHROMIUM_PATH)',
  );

const SHOTS = path.resolve(import.meta.dirname, '../../var/screenshots');

/** A day a year from now, as a date input takes it (YYYY-MM-DD, the browser's and this process's zone). */
function aYearFromNow(): string {
  const d = new Date(Date.now() + 365 * 86_400_000);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

describe.skipIf(!CHROMIUM)('staff console: a tier set by hand on the member page (Chromium)', () => {
  let sys: TestSystem;
  let tenantId: number;
  let api: ReturnType<typeof apiClient>;
  let card: number;
  let ana: { id: number; name: string };
  let managerEmail: string;
  let clerkEmail: string;
  let context: BrowserContext;
  let page: Page;
  let profile: string;

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  const heading = () => page.getByRole('heading', { level: 1 }).textContent();
  const line = () => page.getByTestId(`tier-${card}`);
  /** The member page's tier section (other sections announce their own outcomes). */
  const tiers = () => page.getByRole('region', { name: 'Tiers' });

  async function signInAs(email: string) {
    await page.goto(`${sys.url}/console/?tenant=${tenantId}`);
    await expect.poll(() => page.getByLabel('Merchant (tenant) number').inputValue()).toBe(String(tenantId));
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Send me a code' }).click();
    const code = (await page.getByTestId('sandbox-code').locator('strong').textContent())!;
    await page.getByLabel('One-time code').fill(code);
    await page.getByLabel('One-time code').press('Enter');
    await expect.poll(heading).toBe('Claims queue');
  }

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
      { name: 'till', scopes: ['points_read', 'points_write', 'card_read', 'programme_manage'] },
    );
    api = apiClient(sys.url, { appId: app.app_id, apiKey: app.api_key });
    ({
      card: { id: card },
    } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenantId}/cards`, {
      name: 'Coffee points',
      reward_system: 'points',
      points_ratio: 1,
    }));
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
    const earn = await api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: card, email: `ana.${run}@example.com`, member_name: 'Ana Silva', purchase_amount: 180 },
    });
    expect(earn.status, JSON.stringify(earn.body)).toBe(200);
    ana = { id: earn.body.data!.member_id as number, name: 'Ana Silva' };
    managerEmail = `maria.${run}@cornercoffee.example`;
    clerkEmail = `tom.${run}@cornercoffee.example`;
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, {
      email: managerEmail,
      name: 'Maria Lopez',
      role: 'manager',
    });
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, { email: clerkEmail, name: 'Tom', role: 'staff' });
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
      // Dates as the assertions write them.
      locale: 'en-US',
    });
    page = context.pages()[0] ?? (await context.newPage());
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await sys?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('a manager sets Gold by hand with an expiry and a reason: the new tier shows at once, audited', async () => {
    await signInAs(managerEmail);
    await page.goto(`${sys.url}/console/#/members/${ana.id}`);
    await expect.poll(heading).toBe(ana.name);
    await expect.poll(() => line().locator('.badge').textContent()).toBe('Silver');
    expect(await page.getByTestId(`tier-next-${card}`).textContent()).toBe('120 points to Gold');

    const day = aYearFromNow();
    await expect
      .poll(() => page.getByLabel('New tier').locator('option').allTextContents())
      .toEqual(['Choose a tier', 'Bronze', 'Silver', 'Gold']);
    expect(await page.getByLabel('Card with tiers').inputValue()).toBe(String(card));
    await page.getByLabel('New tier').selectOption('Gold');
    await page.getByLabel('Valid until').fill(day);
    await page.getByLabel('Reason').fill('Regular since the opening');
    await page.getByRole('button', { name: 'Set tier' }).click();

    const until = new Date(`${day}T23:59:59.999`);
    await expect
      .poll(() => tiers().getByRole('status').textContent())
      .toBe(`Set to Gold on Coffee points until ${until.toLocaleDateString('en-US')}.`);
    // The line shows the ledger's answer: Gold, set by hand until that day, the highest tier.
    expect(await line().locator('.badge').textContent()).toBe('Gold');
    expect(await line().textContent()).toContain('set by hand: Regular since the opening');
    expect(await line().textContent()).toContain(`valid until ${until.toLocaleDateString('en-US')}`);
    expect(await line().textContent()).toContain('Highest tier.');
    expect(await page.getByRole('progressbar', { name: 'Progress to Gold' }).count()).toBe(0);
    expect(await page.getByLabel('Reason').inputValue()).toBe('');
    await shot('member-tier-set');

    // The merchant API answers the same, and the audit log names the manager.
    const held = await api('GET', `/api/v1/loyalty/cards/${card}/members/${ana.id}/tier`);
    expect(held.body.data).toMatchObject({
      tier: { name: 'Gold' },
      manual: { reason: 'Regular since the opening' },
      valid_until: until.toISOString(),
      qualifying_total: 180,
    });
    sys.clock.advance(61_000); // past the sign-in code cooldown of the browser's sign-in
    const managerToken = await signIn(staffClient(sys.url), tenantId, managerEmail);
    const audited = await eventually(async () => {
      const r = await staffClient(sys.url)('GET', '/staff/v1/audit?action=tier.set', { token: managerToken });
      return (r.body.data!.entries as { actor: { email?: string }; target: { member_id?: number } }[])[0];
    });
    expect(audited).toMatchObject({ actor: { email: managerEmail }, target: { member_id: ana.id } });
  });

  it("shows the server's message when the ledger refuses, and the tier stays as it was", async () => {
    // Another manager renames Gold while this page is open: the form still offers Gold.
    await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/cards/${card}/tiers`, {
      tiers: [
        { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
        { name: 'Silver', rank: 1, entry_threshold: 100, retain_threshold: 80 },
        { name: 'Platinum', rank: 2, entry_threshold: 300, retain_threshold: 250 },
      ],
      metric: 'points_earned',
      window: 'rolling',
      window_days: 365,
    });
    await page.getByLabel('New tier').selectOption('Gold');
    await page.getByLabel('Valid until').fill(aYearFromNow());
    await page.getByLabel('Reason').fill('Again');
    await page.getByRole('button', { name: 'Set tier' }).click();
    await expect
      .poll(() => tiers().getByRole('alert').textContent())
      .toBe('The card has no tier named "Gold". (tier_not_found)');
    expect(await line().textContent()).toContain('set by hand: Regular since the opening');
    expect(await tiers().getByRole('status').count()).toBe(0); // the earlier success is gone
    await shot('member-tier-refused');
  });

  it('staff who are not managers see the tier but no form, and the API refuses them', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Send me a code' }).count()).toBe(1);
    await signInAs(clerkEmail);
    await page.goto(`${sys.url}/console/#/members/${ana.id}`);
    await expect.poll(heading).toBe(ana.name);
    await expect.poll(() => line().locator('.badge').textContent()).toBe('Platinum');
    expect(await page.getByRole('heading', { name: 'Set a tier by hand' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Set tier' }).count()).toBe(0);
    // The staff user's own token, straight at the API, from the page.
    const refused = await page.evaluate<{ status: number; body: unknown }>(`(async () => {
      const res = await fetch('/staff/v1/cards/${card}/members/${ana.id}/tier', {
        method: 'PUT',
        headers: {
          authorization: 'Bearer ' + sessionStorage.getItem('loyalty.staff.token'),
          'content-type': 'application/json',
        },
        body: JSON.stringify({ tier: 'Bronze', valid_until: '${new Date(Date.now() + 86_400_000 * 30).toISOString()}', reason: 'me' }),
      });
      return { status: res.status, body: await res.json() };
    })()`);
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 'insufficient_role' } } });
  });
});
