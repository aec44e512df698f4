import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../scripts/bootstrap.mjs';
import { signIn } from '../support/staff.ts';
import { staffClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The console's Mail page in a real Chromium against the real stack: a manager sets the tenant's
 * branding, edits a template with its variables listed and a live preview (the HTML in a
 * sandboxed frame, styled by the mail's own inline styles, and the text part), sees an unknown
 * variable at its line, saves and resets. Screenshots go to var/screenshots/. Skipped, with a
 * message, on a machine without Chromium (as console.browser.test.ts).
 */
const CHROMIUM = chromiumPath();
if (!CHROMIUM)
  console.warn(
    'console mail browser tests SKIPPED: no Chromium found (install Debian/Ubuntu `chromium`, or set CHROMIUM_PATH)',
  );

/** A shared, loaded machine: a page's answer may take a few seconds. */
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 15_000 });

const SHOTS = path.resolve(import.meta.dirname, '../../var/screenshots');

describe.skipIf(!CHROMIUM)('staff console: mail branding and templates (Chromium)', () => {
  let sys: TestSystem;
  let tenantId: number;
  let managerEmail: string;
  let managerToken: string;
  let context: BrowserContext;
  let page: Page;
  let profile: string;

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  const status = () => page.getByRole('status').last();
  const heading = () => page.getByRole('heading', { level: 1 }).textContent();
  const template = () =>
    staffClient(sys.url)('GET', '/staff/v1/mail/templates/claim_approved/fr', { token: managerToken });

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    sys = await startTestSystem({ services: ['identity', 'ledger'] });
    ({
      tenant: { id: tenantId },
    } = await sys.admin<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', {
      name: 'Café Atlas',
      sandbox: true,
    }));
    const run = randomUUID().slice(0, 6);
    managerEmail = `maria.${run}@cafe-atlas.example`;
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, {
      email: managerEmail,
      name: 'Maria Lopez',
      role: 'manager',
    });
    managerToken = await signIn(staffClient(sys.url), tenantId, managerEmail);
    sys.clock.advance(61_000); // past the code cooldown of the API sign-in above
    profile = mkdtempSync(path.join(tmpdir(), 'console-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM!,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
      viewport: { width: 1024, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await sys?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('signs the manager in and opens the Mail page', async () => {
    await page.goto(`${sys.url}/console/?tenant=${tenantId}`);
    await poll(() => page.getByLabel('Merchant (tenant) number').inputValue()).toBe(String(tenantId));
    await page.getByLabel('Email').fill(managerEmail);
    await page.getByRole('button', { name: 'Send me a code' }).click();
    const code = (await page.getByTestId('sandbox-code').locator('strong').textContent())!;
    await page.getByLabel('One-time code').fill(code);
    await page.getByLabel('One-time code').press('Enter');
    await poll(heading).toBe('Claims queue');
    await page.getByRole('link', { name: 'Mail' }).click();
    await poll(heading).toBe('Mail');
  });

  it('saves the branding', async () => {
    await page.getByLabel('Sender name').fill('Café Atlas Casablanca');
    await page.getByLabel('Footer postal address').fill('12 Boulevard Anfa, 20000 Casablanca');
    await page.getByLabel('Header colour').fill('#8a1c2b');
    await page.getByLabel('Default language').selectOption('fr');
    await page.getByRole('button', { name: 'Save branding' }).click();
    await poll(() => status().textContent()).toBe('Mail settings saved.');
    const r = await staffClient(sys.url)('GET', '/staff/v1/mail/settings', { token: managerToken });
    expect(r.body.data!.mail).toMatchObject({
      sender_name: 'Café Atlas Casablanca',
      postal_address: '12 Boulevard Anfa, 20000 Casablanca',
      primary_color: '#8a1c2b',
      default_locale: 'fr',
      reply_to: null,
    });
  });

  it('shows a template with its variables and a live preview, and an unknown variable at its line', async () => {
    await page.getByRole('combobox', { name: /^Message/ }).selectOption('claim_approved');
    await page.getByRole('combobox', { name: /^Language/ }).selectOption('fr');
    await poll(() => page.getByTestId('template-state').textContent()).toBe('The default template.');
    await poll(() => page.getByLabel('Subject').inputValue()).toBe('Votre demande de récompense a été acceptée');
    const variables = page.getByRole('table', { name: 'Variables of this message' });
    expect(await variables.locator('tbody tr td:first-child').allTextContents()).toEqual([
      '{{name}}',
      '{{reward}}',
      '{{points}}',
      '{{staff_note}}',
    ]);

    await page.getByLabel('Body').fill('Bonjour {{name}},\n\nVotre {{recompense}} vous attend.');
    const error = page.locator('#body-errors li');
    await poll(() => error.getAttribute('data-line')).toBe('3');
    expect(await error.textContent()).toMatch(/^Line 3, column 7: unknown variable "recompense"/);
    expect(await page.getByLabel('Body').getAttribute('aria-invalid')).toBe('true');
    await page.getByRole('button', { name: 'Save template' }).click();
    await poll(() => page.locator('.notice-error').textContent()).toMatch(/not saved/);
    expect((await template()).body.data!.template).toMatchObject({ custom: false });
    await shot('console-mail-error');

    await page.getByLabel('Subject').fill('Bravo {{name}} !');
    await page.getByLabel('Body').fill('Bonjour {{name}},\n\n« {{reward}} » vous attend au comptoir.');
    await poll(() => page.getByTestId('preview-subject').textContent()).toBe('Bravo Ana Silva !');
    expect(await page.locator('#body-errors li').count()).toBe(0);
    expect(await page.getByTestId('preview-text').textContent()).toContain('vous attend au comptoir.');
    // The HTML part in its sandboxed frame, styled by the mail's own inline styles (the console's policy allows them there).
    const frame = page.frameLocator('iframe[title="HTML preview"]');
    await poll(() => frame.locator('body').textContent()).toContain('vous attend au comptoir.');
    expect(await frame.locator('html').getAttribute('lang')).toBe('fr');
    const band = await frame
      .locator('body')
      .evaluate(
        "[...document.querySelectorAll('div, td, table')].some((e) => getComputedStyle(e).backgroundColor === 'rgb(138, 28, 43)')",
      );
    expect(band).toBe(true);
    expect(await page.locator('iframe[title="HTML preview"]').getAttribute('sandbox')).toBe('');
  });

  it('saves the template, then resets it to the default', async () => {
    await page.getByRole('button', { name: 'Save template' }).click();
    await poll(() => status().textContent()).toBe('Saved: claim_approved in French now uses your template.');
    await poll(() => page.getByTestId('template-state').textContent()).toMatch(/^Your template, saved /);
    expect((await template()).body.data!.template).toMatchObject({
      custom: true,
      subject: 'Bravo {{name}} !',
      updated_by: { type: 'staff', email: managerEmail },
    });
    await shot('console-mail');
    await page
      .locator('iframe[title="HTML preview"]')
      .screenshot({ path: path.join(SHOTS, 'console-mail-preview.png') });

    // Pressed from the keyboard: the full-page screenshot above briefly changes Chromium's
    // emulated viewport, and on a loaded machine a pointer click right after it could land on
    // stale coordinates and be lost (seen in CI); a keyboard press does not depend on layout.
    const reset = page.getByRole('button', { name: 'Reset to default' });
    await poll(() => reset.isEnabled()).toBe(true);
    await reset.focus();
    await page.keyboard.press('Enter');
    await poll(() => status().textContent()).toBe('claim_approved in French uses the default template again.');
    await poll(() => page.getByTestId('template-state').textContent()).toBe('The default template.');
    await poll(() => page.getByLabel('Subject').inputValue()).toBe('Votre demande de récompense a été acceptée');
    expect((await template()).body.data!.template).toMatchObject({ custom: false });
  });
});
