import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../../scripts/bootstrap.mjs';
import { defaultBranding, renderMail, sampleVars, type Locale } from '../../services/identity/src/mail/render/index.ts';

/**
 * Mail as a mail client shows it: the HTML part rendered in a real Chromium (Debian's `chromium`
 * driven by playwright-core), on a desktop and on a phone. The Arabic message must lay out right to
 * left (its text starting at the right edge of the card), the English one left to right, and neither
 * may need a horizontal scroll on a phone. Screenshots go to var/screenshots/mail-*.png. Without a
 * Chromium on the machine these tests are skipped with a message (npm test installs it with apt).
 */
const CHROMIUM = chromiumPath();
if (!CHROMIUM) console.warn('mail browser tests SKIPPED: no Chromium found (install Debian/Ubuntu `chromium`)');
const SHOTS = path.resolve(import.meta.dirname, '../../var/screenshots');

const branding = {
  ...defaultBranding('Café Atlas'),
  primary_color: '#8a1c2b',
  postal_address: '12 Boulevard Anfa, 20000 Casablanca',
  contact: 'bonjour@cafe-atlas.example',
};

interface Layout {
  dir: string;
  direction: string;
  textAlign: string;
  /** The first paragraph's text (measured with a Range) and the box it sits in. */
  text: { left: number; right: number };
  box: { left: number; right: number };
  scrollWidth: number;
  viewport: number;
}

describe.skipIf(!CHROMIUM)('mail in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM!,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu'],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function layoutOf(locale: Locale, width: number): Promise<Layout> {
    const mail = await renderMail({
      kind: 'points_earned',
      locale,
      vars: sampleVars('points_earned', locale),
      branding,
      unsubscribeUrl: 'https://loyalty.example.com/api/v1/unsubscribe?token=sample',
    });
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    // No network: the layout must stand without loading anything.
    await page.route('**/*', (route) => route.abort());
    await page.setContent(mail.html, { waitUntil: 'load' });
    await page.screenshot({ path: path.join(SHOTS, `mail-points-earned-${locale}-${width}.png`), fullPage: true });
    // Run in the page (a string: the test's own types know no DOM).
    const layout = await page.evaluate<Layout>(`(() => {
      const p = document.querySelector('.message p');
      const box = p.parentElement.getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(p);
      // The line's runs (Arabic and the Latin name are separate bidi runs), as one span.
      const rects = [...range.getClientRects()];
      const first = { left: Math.min(...rects.map((r) => r.left)), right: Math.max(...rects.map((r) => r.right)) };
      const style = getComputedStyle(p);
      return {
        dir: document.documentElement.getAttribute('dir'),
        direction: style.direction,
        textAlign: style.textAlign,
        text: { left: first.left, right: first.right },
        box: { left: box.left, right: box.right },
        scrollWidth: document.documentElement.scrollWidth,
        viewport: window.innerWidth,
      };
    })()`);
    await page.close();
    return layout;
  }

  it('lays Arabic out right to left: the text starts at the right edge of the card', async () => {
    for (const width of [1024, 375]) {
      const ar = await layoutOf('ar', width);
      expect(ar.dir).toBe('rtl');
      expect(ar.direction).toBe('rtl');
      expect(ar.textAlign).toBe('right');
      // The greeting is short: it hugs the right edge and leaves room on the left.
      expect(Math.abs(ar.box.right - ar.text.right)).toBeLessThan(2);
      expect(ar.text.left - ar.box.left).toBeGreaterThan(50);
      expect(ar.scrollWidth).toBeLessThanOrEqual(ar.viewport);
    }
  });

  it('lays English out left to right, and fits a phone', async () => {
    for (const width of [1024, 375]) {
      const en = await layoutOf('en', width);
      expect(en.dir).toBe('ltr');
      expect(en.direction).toBe('ltr');
      expect(Math.abs(en.text.left - en.box.left)).toBeLessThan(2);
      expect(en.box.right - en.text.right).toBeGreaterThan(50);
      expect(en.scrollWidth).toBeLessThanOrEqual(en.viewport);
    }
  });
});
