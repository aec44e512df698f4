import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../scripts/bootstrap.mjs';
import { startTestSystem, type TestSystem } from '../support/system.ts';

const CHROMIUM = chromiumPath();
if (!CHROMIUM)
  console.warn('docs UI browser test SKIPPED: no Chromium found (install `chromium`, or set CHROMIUM_PATH)');

/**
 * Swagger UI under its content security policy (plugins/docs.ts): the reference still renders its
 * operations, and the browser reports nothing the policy blocked.
 */
describe.skipIf(!CHROMIUM)('API reference pages (Chromium)', () => {
  let sys: TestSystem;
  let context: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    sys = await startTestSystem({ services: ['identity'] });
    profile = mkdtempSync(path.join(tmpdir(), 'docs-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM!,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await sys?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it.each(['/docs/', '/staff/docs/'])('renders %s with nothing blocked by its policy', async (url) => {
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) blocked.push(msg.text());
    });
    const response = await page.goto(`${sys.url}${url}`);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    await expect.poll(() => page.locator('.opblock').count(), { timeout: 20_000 }).toBeGreaterThan(5);
    await page.locator('.opblock-summary').first().click();
    await expect.poll(() => page.locator('.opblock-body').count()).toBeGreaterThan(0);
    expect(blocked).toEqual([]);
    await page.close();
  });
});
