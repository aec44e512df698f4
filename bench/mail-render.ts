import { performance } from 'node:perf_hooks';
import {
  defaultBranding,
  Formatter,
  LOCALES,
  renderMail,
  type Branding,
} from '../services/identity/src/mail/render/index.ts';
import { digestVars, type Digest } from '../services/identity/src/mail/earn-mails.ts';

/**
 * What rendering mail costs beside the earns that cause it, with points-earned digests on: the CPU
 * of one rendered mail (template, the branded layout (MJML compiled at build time) filled in, text part) measured here in
 * this process, times the most mails the run's earns can cause (a member gets at most one digest
 * per EARN_MAIL_WINDOW_SECONDS: members / window a second, never more than the earns), as a share
 * of the CPU those earns cost across every process (the points_earn scenario's CPU per request).
 * Target: at most 5 %.
 */
export interface MailRenderReport {
  render_us_per_mail: number;
  /** The first mail of a new branding and locale: its layout branded (then kept). */
  first_layout_ms: number;
  earn_rps: number;
  earn_cpu_us: number;
  mails_per_second: number;
  /** Render CPU per second over the earns' CPU per second. */
  share_of_earn_cpu: number;
  target_share: number;
  checks: string[];
}

const TARGET_SHARE = 0.05;

function brandingOf(i: number): Branding {
  return {
    ...defaultBranding(`Bench shop ${i}`),
    primary_color: `#${(0x100000 + i * 7919).toString(16).slice(-6)}`,
    postal_address: `${i} Bench Street, Lisbon`,
    contact: `shop${i}@bench.example`,
  };
}

export async function measureMailRender(o: {
  earnRps: number;
  /** CPU µs per points earn across every process (null: the earns are taken to fill every core). */
  earnCpuUs: number | null;
  cores: number;
  members: number;
  windowSeconds?: number;
  mails?: number;
}): Promise<MailRenderReport> {
  const window = o.windowSeconds ?? 60;
  const n = o.mails ?? 20_000;
  const digest = (i: number): Digest => ({
    tenant_id: '1',
    member_id: String(i),
    card_id: '7',
    earns: 1 + (i % 4),
    points: String(10 + (i % 500)),
    pending_points: i % 3 === 0 ? '25' : '0',
    available_at: i % 3 === 0 ? new Date('2027-03-31T10:00:00Z') : null,
    new_balance: String(1_000 + i),
  });
  const brandings = Array.from({ length: 20 }, (_, i) => brandingOf(i));
  const render = (i: number) => {
    const locale = LOCALES[i % LOCALES.length]!;
    const vars = digestVars(digest(i), `Member ${i}`)(new Formatter(locale, 'Europe/Lisbon'));
    return renderMail({ kind: 'points_earned', locale, vars, branding: brandings[i % brandings.length]! });
  };
  const cold = performance.now();
  await renderMail({
    kind: 'points_earned',
    locale: 'ar',
    vars: digestVars(digest(1), 'Cold')(new Formatter('ar')),
    branding: brandingOf(999),
  });
  const firstLayoutMs = performance.now() - cold;
  for (let i = 0; i < 2_000; i++) await render(i); // every layout compiled, the JIT warm
  const cpu = process.cpuUsage();
  for (let i = 0; i < n; i++) await render(i);
  const used = process.cpuUsage(cpu);
  const renderUs = (used.user + used.system) / n;
  const mailsPerSecond = Math.min(o.earnRps, o.members / window);
  const earnCpuUs = o.earnCpuUs ?? (o.cores * 1e6) / Math.max(o.earnRps, 1);
  const share = (mailsPerSecond * renderUs) / (o.earnRps * earnCpuUs);
  const checks =
    share <= TARGET_SHARE
      ? []
      : [`mail rendering ${(share * 100).toFixed(2)} % of the earns' CPU (target <= ${TARGET_SHARE * 100} %)`];
  return {
    render_us_per_mail: Math.round(renderUs * 10) / 10,
    first_layout_ms: Math.round(firstLayoutMs * 10) / 10,
    earn_rps: o.earnRps,
    earn_cpu_us: Math.round(earnCpuUs),
    mails_per_second: Math.round(mailsPerSecond * 10) / 10,
    share_of_earn_cpu: Math.round(share * 100_000) / 100_000,
    target_share: TARGET_SHARE,
    checks,
  };
}

// `node --import tsx bench/mail-render.ts [earn_rps] [earn_cpu_us] [members]`: the figure alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const [rps, cpuUs, members] = process.argv.slice(2).map(Number);
  const r = await measureMailRender({
    earnRps: rps || 1_000,
    earnCpuUs: cpuUs || null,
    cores: (await import('node:os')).cpus().length,
    members: members || 2_001,
  });
  console.log(JSON.stringify(r, null, 2));
}
