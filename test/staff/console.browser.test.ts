import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../scripts/bootstrap.mjs';
import { consoleTenant, signIn, type ConsoleTenant } from '../support/staff.ts';
import { staffClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The staff console in a real Chromium (Debian's `chromium`, driven by playwright-core; no browser
 * download): sign in with the sandbox code, handle claims, look up a member, adjust as a manager,
 * write an earning rule and preview it, be refused as staff, verify the audit chain. Every page is saved as a screenshot in
 * var/screenshots/. Without a Chromium on the machine these tests are skipped with a message
 * saying what to install (npm test installs it with apt where it can: scripts/bootstrap.mjs).
 */
const CHROMIUM = chromiumPath();
if (!CHROMIUM)
  console.warn(
    'console browser tests SKIPPED: no Chromium found (install Debian/Ubuntu `chromium`, or set CHROMIUM_PATH)',
  );

const SHOTS = path.resolve(import.meta.dirname, '../../var/screenshots');

describe.skipIf(!CHROMIUM)('staff console (Chromium)', () => {
  let sys: TestSystem;
  let t: ConsoleTenant;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  let clerkEmail: string;
  let referralCode: string;
  /** What the browser reported against the content security policy (zod must not probe eval). */
  const cspReports: string[] = [];

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  const status = () => page.getByRole('status').last();

  /** Every form control on the page has an accessible name (a label or aria-label). */
  async function expectLabelledControls() {
    // Run in the page (a string: the test's own types know no DOM).
    const unlabelled = await page.evaluate<string[]>(`[...document.querySelectorAll('input, select, textarea, button')]
      .filter((c) => c.type !== 'hidden' && !((c.labels?.length ?? 0) > 0 || c.getAttribute('aria-label') || c.textContent.trim()))
      .map((c) => c.outerHTML.slice(0, 80))`);
    expect(unlabelled).toEqual([]);
  }

  async function signInAs(email: string) {
    await page.goto(`${sys.url}/console/?tenant=${t.tenantId}`);
    await expect.poll(() => page.getByLabel('Merchant (tenant) number').inputValue()).toBe(String(t.tenantId));
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Send me a code' }).click();
    const code = (await page.getByTestId('sandbox-code').locator('strong').textContent())!;
    expect(code).toMatch(/^\d{6}$/);
    await shot(`sign-in${email === clerkEmail ? '-staff' : ''}`);
    await page.getByLabel('One-time code').fill(code);
    await page.getByLabel('One-time code').press('Enter'); // the keyboard submits the form
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Claims queue');
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals'] });
    t = await consoleTenant(sys, 2);
    const staff = staffClient(sys.url);
    const manager = await signIn(staff, t.tenantId, t.managerEmail);
    clerkEmail = `tom.${randomUUID().slice(0, 6)}@cornercoffee.example`;
    const invited = await staff('POST', '/staff/v1/staff', {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { email: clerkEmail, name: 'Tom Berg', role: 'staff' },
    });
    expect(invited.status).toBe(200);
    // Ana refers a newcomer: the dashboard has a bar and her page a code and a referral.
    const code = await t.api('GET', `/api/v1/loyalty/cards/${t.pointsCard}/members/${t.members[0]!.id}/referral-code`);
    const newcomer = await t.api('POST', '/api/v1/auth/member/register', {
      body: {
        name: 'Eva New',
        email: `eva.${randomUUID().slice(0, 6)}@example.com`,
        phone: `+3519${Date.now() % 1e8}`,
      },
    });
    const applied = await t.api('POST', '/api/v1/loyalty/referrals/apply', {
      body: {
        referral_code: code.body.data!.referral_code,
        card_id: t.pointsCard,
        referee_member_id: (newcomer.body.data!.member as { id: number }).id,
      },
    });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    referralCode = code.body.data!.referral_code as string;
    // The manager signs in again in the browser: past the code cooldown of the API sign-in above.
    sys.clock.advance(61_000);
    profile = mkdtempSync(path.join(tmpdir(), 'console-chromium-'));
    // A new empty profile; a tablet in landscape.
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
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) cspReports.push(msg.text());
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await sys?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('signs a manager in with the sandbox code and handles the claims queue: approve, reject', async () => {
    await signInAs(t.managerEmail);
    const [first, second] = t.claims;
    const row = (id: number) => page.locator(`tr[data-claim="${id}"]`);
    // Spendable: 150 + the referral bonus, minus the 100 the claim holds.
    await expect.poll(() => row(first!).locator('[data-balance]').textContent()).toBe('150');
    await expectLabelledControls();
    // Keyboard: from the page's heading (focused on arrival) back through the header (sign out, the
    // navigation) to the skip link, which moves the focus to the page.
    const focused = () => page.evaluate<string>('document.activeElement.textContent');
    const stops: string[] = [];
    for (let i = 0; i < 16 && (stops.at(-1) ?? '') !== 'Skip to content'; i++) {
      await page.keyboard.press('Shift+Tab');
      stops.push(await focused());
    }
    expect(stops).toEqual([
      'Sign out',
      'Team',
      'Audit log',
      'Exports',
      'Mail',
      'Imports',
      'Earning rules',
      'Tiers',
      'Referrals',
      'Programme',
      'Adjustments',
      'Members',
      'Claims',
      'Skip to content',
    ]);
    await page.keyboard.press('Enter');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('main');
    await shot('claims-queue');

    await row(first!).getByLabel(`Note for claim ${first}`).fill('Enjoy your coffee');
    await page.getByRole('button', { name: `Approve claim ${first}` }).click();
    await expect.poll(() => status().textContent()).toMatch(new RegExp(`Claim ${first} approved: 100 points deducted`));
    await expect.poll(() => row(first!).locator('.badge').textContent()).toBe('approved');
    await expect.poll(() => row(first!).locator('[data-balance]').textContent()).toBe('150');
    await page.getByRole('button', { name: `Reject claim ${second}` }).click();
    await expect.poll(() => status().textContent()).toMatch(new RegExp(`Claim ${second} rejected`));
    await expect.poll(() => row(second!).locator('.badge').textContent()).toBe('rejected');
    await expect.poll(() => row(second!).locator('[data-balance]').textContent()).toBe('150');
    // The queue keeps no pending claim: nothing left to decide.
    await page.getByLabel('Status').selectOption('pending');
    await expect.poll(() => page.getByText('No claims match these filters.').count()).toBe(1);
    await shot('claims-decided');
  });

  it('looks a member up by email: balances per card, history, referral code', async () => {
    const m = t.members[0]!;
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('textbox', { name: 'Email' }).fill(m.email);
    await page.getByRole('button', { name: 'Find' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(m.name);
    await expect.poll(() => page.getByTestId(`balance-${t.pointsCard}`).textContent()).toBe('150 points');
    await expect.poll(() => page.getByTestId(`balance-${t.cashbackCard}`).textContent()).toMatch(/10\.00/);
    await expect.poll(() => page.getByRole('cell', { name: 'reward claimed' }).count()).toBe(1);
    await expect.poll(() => page.getByTestId('referral-code').textContent()).toBe(referralCode);
    await expect.poll(() => page.getByText(/Eva New, completed, 100 points bonus/).count()).toBe(1);
    await expectLabelledControls();
    await shot('member');
  });

  it('refuses an answer the staff contract does not describe: a clear error, nothing rendered from it', async () => {
    const m = t.members[0]!;
    const balances = '**/staff/v1/members/*/balances';
    // The balances as a broken server might send them: a card without its name, a balance as text.
    await page.route(balances, (route) =>
      route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({
          success: true,
          data: {
            member_id: m.id,
            balances: [{ card_id: t.pointsCard, reward_system: 'points', currency: 'EUR', points_balance: '150' }],
          },
        }),
      }),
    );
    await page.reload();
    await expect.poll(() => page.getByTestId('referral-code').textContent()).toBe(referralCode); // the rest still works
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.count()).toBe(1);
    const text = await alert.textContent();
    expect(text).toMatch(
      /answer to GET \/staff\/v1\/members\/:member_id\/balances does not match the staff API contract/,
    );
    expect(text).toContain('balances.0.card_name');
    expect(text).toContain('balances.0.points_balance');
    expect(text).toContain('(unexpected_answer)');
    expect(await page.getByTestId(`balance-${t.pointsCard}`).count()).toBe(0);
    await shot('member-unexpected-answer');
    await page.unroute(balances);
    await page.reload();
    await expect.poll(() => page.getByTestId(`balance-${t.pointsCard}`).textContent()).toBe('150 points');
    // Every answer so far was checked with the contract's schemas, and none needed eval.
    expect(cspReports).toEqual([]);
  });

  it('adjusts a balance as a manager, and a deduction past the balance is refused', async () => {
    await page.getByRole('link', { name: 'Adjust a balance' }).click();
    await page.getByRole('button', { name: 'Find member' }).click();
    await page.getByLabel('Points', { exact: true }).fill('25');
    await page.getByLabel(/Reason/).fill('Machine was down');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await expect.poll(() => status().textContent()).toMatch(/Added 25 points to .* 150 points → 175 points/);
    await page.getByLabel('Deduct').check();
    await page.getByLabel('Points', { exact: true }).fill('500');
    await page.getByLabel(/Reason/).fill('Correction');
    await page.getByRole('button', { name: 'Deduct', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/insufficient_points/);
    await expectLabelledControls();
    await shot('adjustment');
    const balance = await t.api(
      'GET',
      `/api/v1/loyalty/points/balance?card_id=${t.pointsCard}&member_id=${t.members[0]!.id}`,
    );
    expect(balance.body.data!.points_balance).toBe(175);
  });

  it('shows the referral dashboard with its chart', async () => {
    await page.getByRole('link', { name: 'Referrals' }).click();
    await expect.poll(() => page.getByRole('img', { name: /referrals per period/i }).count()).toBe(1);
    await expect.poll(() => page.locator('svg rect.bar-a').count()).toBe(4);
    await expect.poll(() => page.getByRole('cell', { name: /Ana Silva/ }).count()).toBe(1); // top referrer
    await shot('referrals');
  });

  it('shows the audit log and verifies the chain', async () => {
    await page.getByRole('link', { name: 'Audit log' }).click();
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Apply filters' }).click();
          return page.getByRole('cell', { name: 'balance.adjusted' }).count();
        },
        { timeout: 15_000 },
      )
      .toBe(1);
    expect(await page.getByRole('cell', { name: 'claim.approved' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await expect.poll(() => status().textContent()).toMatch(/Chain intact: \d+ rows verified/);
    await expectLabelledControls();
    await shot('audit-log');
    await page.getByRole('link', { name: 'Team' }).click();
    await expect.poll(() => page.getByRole('cell', { name: clerkEmail }).count()).toBe(1);
    await shot('team');
  });

  it('writes an earning rule: a draft, its preview on a sample purchase, activation, an earn that uses it', async () => {
    await page.getByRole('link', { name: 'Earning rules' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Earning rules');
    await page.getByRole('combobox', { name: /^Card/ }).selectOption(String(t.pointsCard));
    await page.getByLabel('Name', { exact: true }).fill('Pastry x2');
    await page.getByRole('spinbutton', { name: 'Factor' }).fill('2');
    await page.getByLabel(/Categories/).fill('pastry');
    await page.getByRole('button', { name: 'Create draft' }).click();
    await expect.poll(() => status().textContent()).toMatch(/Draft "Pastry x2" created/);
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    // 2 croissants (pastry) at 2.50 and a latte at 7.50: base 12, the draft adds 5.
    await expect.poll(() => status().textContent()).toMatch(/would earn 17 \(base 12\)/);
    expect(await page.getByRole('cell', { name: 'draft' }).count()).toBeGreaterThan(0);
    await expectLabelledControls();
    await shot('rules-preview');
    await page.getByRole('button', { name: 'Activate Pastry x2' }).click();
    await expect.poll(() => status().textContent()).toMatch(/"Pastry x2" is active/);
    await shot('rules');
    const earn = await t.api('POST', '/api/v1/loyalty/points/earn', {
      body: {
        card_id: t.pointsCard,
        member_id: t.members[1]!.id,
        purchase_amount: 12.5,
        line_items: [
          { sku: 'croissant', category: 'pastry', quantity: 2, unit_price: 2.5 },
          { sku: 'latte', category: 'drink', quantity: 1, unit_price: 7.5 },
        ],
      },
    });
    expect(earn.body.data).toMatchObject({ points_earned: 17, rules_applied: [{ name: 'Pastry x2', points: 5 }] });
  });

  it('refuses a staff user adjustments, in the console and at the API', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Send me a code' }).count()).toBe(1);
    await signInAs(clerkEmail);
    const nav = await page.getByRole('navigation', { name: 'Console' }).textContent();
    expect(nav).not.toContain('Adjustments');
    expect(nav).not.toContain('Audit log');
    expect(nav).not.toContain('Mail');
    await page.goto(`${sys.url}/console/#/adjust`);
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/Only managers can adjust balances/);
    await shot('adjustment-refused-staff');
    // The staff user's own token, straight at the API, from the page.
    const body = JSON.stringify({
      card_id: t.pointsCard,
      member_id: t.members[1]!.id,
      direction: 'add',
      points: 1000,
      reason: 'me',
    });
    const refused = await page.evaluate<{ status: number; body: unknown }>(`(async () => {
      const res = await fetch('/staff/v1/adjustments', {
        method: 'POST',
        headers: {
          authorization: 'Bearer ' + sessionStorage.getItem('loyalty.staff.token'),
          'content-type': 'application/json',
          'idempotency-key': crypto.randomUUID(),
        },
        body: ${JSON.stringify(body)},
      });
      return { status: res.status, body: await res.json() };
    })()`);
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 'insufficient_role' } } });
  });
});
