// What a PromQL expression reads: its metric names and its selectors' equality matchers. Enough
// of the language for the platform's rules and dashboards (strings, label matchers, ranges,
// grouping clauses, functions, numbers, durations and Grafana's $variables are told apart).

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'offset',
  'bool',
  'inf',
  'nan',
  'atan2',
]);

/** The expression with string literals emptied, so nothing inside one is read as a name. */
const withoutStrings = (expr: string) => expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');

/** Metric names an expression reads (recording rules' names included, e.g. `loyalty:x:rate5m`). */
export function metricNames(expr: string): string[] {
  let s = withoutStrings(expr);
  s = s.replace(/\{[^}]*\}/g, ' ');
  s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  s = s.replace(/\[[^\]]*\]/g, ' ');
  s = s.replace(/\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/g, ' ');
  const names = new Set<string>();
  for (const m of s.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const before = s[m.index - 1] ?? ' ';
    if (/[0-9.]/.test(before)) continue; // 1e3, 5m
    if (/^\s*\(/.test(s.slice(m.index + m[0].length))) continue; // a function
    if (KEYWORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names];
}

export interface Selector {
  metric: string;
  /** label = "value" matchers (not !=, =~ or !~, nor values holding a $variable). */
  equals: Record<string, string>;
}

/** The selectors `metric{...}` of an expression with their equality matchers. */
export function selectors(expr: string): Selector[] {
  const out: Selector[] = [];
  for (const m of expr.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\s*\{((?:[^}"]|"(?:[^"\\]|\\.)*")*)\}/g)) {
    const equals: Record<string, string> = {};
    for (const e of m[2]!.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"/g))
      if (e[2] === '=' && !e[3]!.includes('$')) equals[e[1]!] = e[3]!;
    out.push({ metric: m[1]!, equals });
  }
  return out;
}

/** The samples of a Prometheus text exposition: name and labels of each line. */
export function parseExposition(text: string): { name: string; labels: Record<string, string> }[] {
  const out: { name: string; labels: Record<string, string> }[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels });
  }
  return out;
}
