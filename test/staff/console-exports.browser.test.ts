import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../scripts/bootstrap.mjs';
import { apiClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * A manager exports the journal of a card as CSV from the console's Exports page, in a real
 * Chromium against the real stack: the file saved is the merchant API's export byte for byte; staff
 * who are not managers get no form. Screenshots go to var/screenshots/. Skipped, with a message,
 * on a machine without Chromium (as console.browser.test.ts).
 */
const CHROMIUM = chromiumPath();
if (!CHROMIUM)
  console.warn(
    'console exports browser tests SKIPPED: no Chromium found (install Debian/Ubuntu `chromium`, or set CHROMIUM_PATH)',
  );

const SHOTS = path.resolve(import.meta.dirname, '../../var/screenshots');

describe.skipIf(!CHROMIUM)('staff console: the Exports page (Chromium)', () => {
  let sys: TestSystem;
  let tenantId: number;
  let app: { app_id: string; api_key: string };
  let card: number;
  let managerEmail: string;
  let clerkEmail: string;
  let context: BrowserContext;
  let page: Page;
  let profile: string;

  const heading = () => page.getByRole('heading', { level: 1 }).textContent();

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
    ({ app } = await sys.admin<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${tenantId}/apps`,
      { name: 'till', scopes: ['points_read', 'points_write', 'card_read', 'programme_manage'] },
    ));
    const api = apiClient(sys.url, { appId: app.app_id, apiKey: app.api_key });
    ({
      card: { id: card },
    } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenantId}/cards`, {
      name: 'Coffee points',
      reward_system: 'points',
      points_ratio: 1,
    }));
    const run = randomUUID().slice(0, 6);
    for (const [i, name] of ['Ana Silva', 'Bruno, "the barista"'].entries()) {
      const earn = await api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: card, email: `m${i}.${run}@example.com`, member_name: name, purchase_amount: 12 + i },
      });
      expect(earn.status, JSON.stringify(earn.body)).toBe(200);
    }
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
      acceptDownloads: true,
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
      locale: 'en-US',
    });
    page = context.pages()[0] ?? (await context.newPage());
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await sys?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('a manager downloads a card’s journal as CSV: the merchant API’s file, byte for byte', async () => {
    await signInAs(managerEmail);
    await page.goto(`${sys.url}/console/#/exports`);
    await expect.poll(heading).toBe('Exports');
    await page.getByLabel('What').selectOption('journal');
    await page.getByLabel('Card').selectOption(String(card));
    await page.getByLabel('Format').selectOption('csv');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`journal-card-${card}.csv`);
    const saved = readFileSync((await download.path())!, 'utf8');
    const res = await fetch(`${sys.url}/api/v1/exports/journal?card_id=${card}&format=csv`, {
      headers: { 'x-app-id': app.app_id, 'x-api-key': app.api_key },
    });
    expect(saved).toBe(await res.text());
    expect(saved.split('\r\n')[0]).toBe(
      'id,card_id,member_id,event,amount,balance_after,purchase_amount,reference,reward_id,metadata,created_at',
    );
    expect(saved.split('\r\n').filter(Boolean)).toHaveLength(3);
    await expect.poll(() => page.getByTestId('export-done').textContent()).toContain(`journal-card-${card}.csv`);
    await page.screenshot({ path: path.join(SHOTS, 'exports.png'), fullPage: true });
  });

  it('staff who are not managers get no form', async () => {
    sys.clock.advance(61_000); // past the sign-in code cooldown
    await page.evaluate('sessionStorage.clear()');
    await signInAs(clerkEmail);
    await page.goto(`${sys.url}/console/#/exports`);
    await expect.poll(heading).toBe('Exports');
    await expect.poll(() => page.getByText('Only managers can export the programme’s data.').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Download' }).count()).toBe(0);
  });
});
