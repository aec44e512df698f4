// Observability as code (deploy/observability and the production overlay's monitoring.yaml): the
// rules pass promtool's check and unit tests, every alert has a unit test and a runbook, the
// generated files are up to date and the PrometheusRule holds exactly the rule file's groups, the
// dashboards are valid Grafana JSON whose queries parse and use only defined variables.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ensurePromtool } from '../../scripts/bootstrap.mjs';
import { metricNames, parseExposition, selectors } from '../../scripts/observability/promql.ts';
import { monitoringFile, renderAll, root, rulesFile, scrapedServices } from '../../scripts/observability/render.ts';
import { defaultOpsPort } from '../deploy/service-configs.ts';
import { RUNBOOKS, runbookAnchor, type AlertingRule, type RuleGroup } from '../../scripts/observability/rules.ts';

const testsFile = 'deploy/observability/rules.test.yaml';
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const groups = (parse(read(rulesFile)) as { groups: RuleGroup[] }).groups;
const alerts = groups.flatMap((g) => g.rules).filter((r): r is AlertingRule => 'alert' in r);

let promtool: string;
let scratch: string;
beforeAll(() => {
  const found = ensurePromtool();
  if (!found)
    throw new Error(
      'promtool is missing: install Debian\u2019s prometheus package (`apt-get install prometheus`) or set PROMTOOL_PATH',
    );
  promtool = found;
  scratch = mkdtempSync(path.join(tmpdir(), 'loyalty-rules-'));
});
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const run = (...args: string[]) => {
  const r = spawnSync(promtool, args, { encoding: 'utf8', cwd: root });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
};

describe('Prometheus rules', () => {
  it('pass promtool check rules', () => {
    const r = run('check', 'rules', rulesFile);
    expect(r.output).toContain('SUCCESS');
    expect(r.ok).toBe(true);
  });

  it('pass their unit tests (promtool test rules)', () => {
    const r = run('test', 'rules', testsFile);
    expect(r.output).toContain('SUCCESS');
    expect(r.ok).toBe(true);
  }, 120_000);

  it('have a unit test in which each alert fires, and one in which it stays quiet', () => {
    const tests = (
      parse(read(testsFile)) as {
        tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
      }
    ).tests.flatMap((t) => t.alert_rule_test ?? []);
    const firing = new Set(tests.filter((t) => t.exp_alerts.length > 0).map((t) => t.alertname));
    const quiet = new Set(tests.filter((t) => t.exp_alerts.length === 0).map((t) => t.alertname));
    expect(alerts.length).toBeGreaterThanOrEqual(15);
    expect(alerts.map((a) => a.alert).filter((a) => !firing.has(a))).toEqual([]);
    expect(alerts.map((a) => a.alert).filter((a) => !quiet.has(a))).toEqual([]);
  });

  it('fail their unit tests when an alert is broken (the tests can fail)', () => {
    const broken = read(rulesFile).replace(
      'max by (service) (loyalty_outbox_oldest_age_seconds) > 120',
      'max by (service) (loyalty_outbox_oldest_age_seconds) > 1200',
    );
    expect(broken).not.toBe(read(rulesFile));
    writeFileSync(path.join(scratch, 'rules.yaml'), broken);
    copyFileSync(path.join(root, testsFile), path.join(scratch, 'rules.test.yaml'));
    const r = run('test', 'rules', path.join(scratch, 'rules.test.yaml'));
    expect(r.ok).toBe(false);
    expect(r.output).toContain('LoyaltyOutboxStuck');
  }, 120_000);

  it('give every alert a severity, a summary and a runbook section that exists', () => {
    const runbooks = read(RUNBOOKS);
    const anchors = new Set(
      [...runbooks.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        m[1]!
          .trim()
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const a of alerts) {
      expect(['page', 'ticket', 'info'], a.alert).toContain(a.labels.severity);
      expect(a.annotations.summary, a.alert).toBeTruthy();
      expect(a.annotations.runbook_url, a.alert).toBe(`${RUNBOOKS}#${runbookAnchor(a.alert)}`);
      expect(anchors, `${RUNBOOKS} has no section ${a.alert}`).toContain(runbookAnchor(a.alert));
    }
  });
});

describe('generated files', () => {
  it('are up to date (node --import tsx scripts/observability.ts)', () => {
    for (const [file, content] of renderAll()) expect(read(file), file).toBe(content);
  });

  it('the PrometheusRule of the production overlay holds exactly the groups of the rule file', () => {
    const docs = parseAllDocuments(read(monitoringFile)).map((d) => d.toJS() as Record<string, unknown>);
    const rules = docs.filter((d) => d.kind === 'PrometheusRule');
    expect(rules).toHaveLength(1);
    expect((rules[0]!.spec as { groups: unknown }).groups).toEqual(groups);
    const monitors = docs.filter((d) => d.kind === 'ServiceMonitor');
    expect(monitors.map((m) => (m.metadata as { name: string }).name).sort()).toEqual([...scrapedServices].sort());
  });

  it('the dashboards ConfigMap of the production overlay holds exactly the dashboard files', () => {
    const docs = parseAllDocuments(read(monitoringFile)).map((d) => d.toJS() as Record<string, unknown>);
    const cm = docs.find((d) => d.kind === 'ConfigMap') as {
      metadata: { labels: Record<string, string> };
      data: Record<string, string>;
    };
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
    const files = [...renderAll().keys()].filter((f) => f.endsWith('.json'));
    expect(Object.keys(cm.data).sort()).toEqual(files.map((f) => path.basename(f)).sort());
    for (const f of files) expect(cm.data[path.basename(f)], f).toBe(read(f));
  });
});

describe('the compose observability profile', () => {
  const compose = parse(read('deploy/compose.yaml')) as {
    services: Record<string, { profiles?: string[]; volumes?: string[]; command?: string[] }>;
  };

  it('runs a Prometheus whose configuration promtool accepts, scraping every ops port with the rules', () => {
    const r = run('check', 'config', 'deploy/observability/prometheus.yml');
    expect(r.output).toContain('SUCCESS: 1 rule files found');
    expect(r.ok).toBe(true);
    const config = parse(read('deploy/observability/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: { honor_labels?: boolean; static_configs: { targets: string[] }[] }[];
    };
    expect(config.rule_files).toEqual(['rules.yaml']);
    const targets = config.scrape_configs.flatMap((c) => c.static_configs.flatMap((t) => t.targets));
    expect(targets.sort()).toEqual(scrapedServices.map((s) => `${s}:${defaultOpsPort(s)}`).sort());
    expect(config.scrape_configs.every((c) => c.honor_labels === true)).toBe(true);
    const prometheus = compose.services.prometheus!;
    expect(prometheus.profiles).toEqual(['observability']);
    expect(prometheus.volumes).toContain('./observability:/etc/prometheus/loyalty:ro');
    expect(prometheus.command).toContain('--config.file=/etc/prometheus/loyalty/prometheus.yml');
  });

  it('runs a Grafana provisioned with the Prometheus as default data source and the dashboards', () => {
    const grafana = compose.services.grafana!;
    expect(grafana.profiles).toEqual(['observability']);
    const datasources = parse(read('deploy/observability/grafana/provisioning/datasources/prometheus.yaml')) as {
      datasources: { type: string; url: string; isDefault: boolean }[];
    };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090', isDefault: true }),
    ]);
    const providers = parse(read('deploy/observability/grafana/provisioning/dashboards/loyalty.yaml')) as {
      providers: { options: { path: string } }[];
    };
    const mount = grafana.volumes!.find((v) => v.startsWith('./observability/dashboards:'));
    expect(mount?.split(':')[1]).toBe(providers.providers[0]!.options.path);
    expect(grafana.volumes).toContain('./observability/grafana/provisioning:/etc/grafana/provisioning:ro');
  });
});

// ── Dashboards ─────────────────────────────────────────────────────────────────────────────────
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: { refId: string; expr: string; datasource?: { type: string; uid: string } }[];
  gridPos: { x: number; y: number; w: number; h: number };
}
interface Dashboard {
  uid: string;
  title: string;
  templating: { list: { name: string; type: string; query: unknown; datasource?: { uid: string } }[] };
  panels: Panel[];
}
const dashboardFiles = [...renderAll().keys()].filter((f) => f.endsWith('.json'));
const builtins = new Set(['__rate_interval', '__interval', '__range', '__range_s', '__interval_ms']);

/** Variables a text uses: $name, ${name}, ${name:format}, [[name]]. */
const variablesIn = (text: string) =>
  [...text.matchAll(/\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]/g)].map(
    (m) => m[1] ?? m[2] ?? m[3]!,
  );

describe.each(dashboardFiles)('dashboard %s', (file) => {
  const text = read(file);
  const dashboard = JSON.parse(text) as Dashboard;
  const defined = new Set(dashboard.templating.list.map((v) => v.name));

  it('is Grafana JSON with a uid, a title and panels that do not overlap', () => {
    expect(dashboard.uid).toMatch(/^loyalty-[a-z]+$/);
    expect(dashboard.title).toBeTruthy();
    expect(dashboard.panels.length).toBeGreaterThan(3);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    const cells = new Set<string>();
    for (const p of dashboard.panels)
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++)
        for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
          expect(x, p.title).toBeLessThan(24);
          expect(cells.has(`${x},${y}`), `${p.title} overlaps another panel`).toBe(false);
          cells.add(`${x},${y}`);
        }
  });

  it('queries the data source of its `datasource` variable, never a fixed uid', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({
      type: 'datasource',
      query: 'prometheus',
    });
    const uids = [...text.matchAll(/"uid":\s*"([^"]*)"/g)].map((m) => m[1]).filter((uid) => uid !== dashboard.uid);
    expect(uids.length).toBeGreaterThan(0);
    expect(new Set(uids)).toEqual(new Set(['${datasource}']));
    for (const p of dashboard.panels.filter((p) => p.type !== 'row')) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
    }
  });

  it('uses no variable it does not define', () => {
    const used = new Set(variablesIn(text));
    expect([...used].filter((v) => !defined.has(v) && !builtins.has(v))).toEqual([]);
  });

  it('has queries promtool parses (each as a rule expression, variables filled in)', () => {
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const rules = {
      groups: [
        {
          name: 'dashboard',
          rules: exprs.map((expr, i) => ({
            record: `dashboard:query_${i}`,
            expr: expr
              .replaceAll('$__rate_interval', '5m')
              .replace(/\$\{?([A-Za-z0-9_]+)\}?/g, (_m, v: string) => (v === 'route' ? '.*' : 'x')),
          })),
        },
      ],
    };
    const file = path.join(scratch, `${dashboard.uid}.rules.yaml`);
    writeFileSync(file, JSON.stringify(rules));
    const r = run('check', 'rules', file);
    expect(r.output, r.output).toContain('SUCCESS');
  });
});

describe('reading PromQL (the metric-existence check relies on it)', () => {
  it('finds metric names and not functions, keywords, labels, durations or variables', () => {
    expect(
      metricNames(
        'histogram_quantile(0.99, sum by (route, le) (rate(loyalty_http_request_duration_seconds_bucket{route=~"$route",le="0.1"}[$__rate_interval]))) / on (service) group_left max(loyalty:x:rate5m offset 5m) > 1e3 and time() - up',
      ).sort(),
    ).toEqual(['loyalty:x:rate5m', 'loyalty_http_request_duration_seconds_bucket', 'up']);
  });

  it('finds the equality matchers of selectors', () => {
    expect(selectors('sum(a{x="1",y=~"2",z!="3",w="$v"}) + b{q = "r"}')).toEqual([
      { metric: 'a', equals: { x: '1' } },
      { metric: 'b', equals: { q: 'r' } },
    ]);
  });

  it('parses an exposition', () => {
    expect(parseExposition('# HELP a x\na{b="c",d="e"} 1\nf 2\n')).toEqual([
      { name: 'a', labels: { b: 'c', d: 'e' } },
      { name: 'f', labels: {} },
    ]);
  });
});
