// Where a service spent its CPU: a V8 .cpuprofile (node --cpu-prof) summed by self time per
// function and per package; and where it allocated: a sampled .heapprofile summed by the bytes
// each function allocated itself. Used by `npm run bench -- --profile`; also runnable on its own:
//   node --import tsx bench/profile-summary.ts var/bench-profiles/<file>.cpuprofile|.heapprofile
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  busy_ms: number;
  idle_ms: number;
  byFunction: { name: string; ms: number; pct: number }[];
  byPackage: { name: string; ms: number; pct: number }[];
}

function packageOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return url.replace(/^node:(internal\/)?/, 'node:').split('/')[0]!;
  const svc = /services\/([^/]+)\/dist\//.exec(url);
  if (svc) return `${svc[1]} (own code + libs)`;
  return url;
}

export function summarizeProfile(file: string, top = 12): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  p.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  let idle = 0;
  let busy = 0;
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') {
      idle += us;
      continue;
    }
    busy += us;
    const file = n.callFrame.url.replace(/^.*\/(node_modules|services)\//, '$1/');
    const key = `${name} ${file ? `${file}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
    fn.set(key, (fn.get(key) ?? 0) + us);
    const pk = packageOf(n.callFrame.url, name);
    pkg.set(pk, (pkg.get(pk) ?? 0) + us);
  }
  const rank = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), pct: Math.round((us / busy) * 1000) / 10 }));
  return {
    busy_ms: Math.round(busy / 1000),
    idle_ms: Math.round(idle / 1000),
    byFunction: rank(fn),
    byPackage: rank(pkg),
  };
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

export interface HeapSummary {
  /** Bytes allocated while sampled (an estimate: V8 samples about one allocation per interval). */
  mb: number;
  byFunction: { name: string; mb: number; pct: number }[];
  byPackage: { name: string; mb: number; pct: number }[];
}

/** A sampled allocation profile (HeapProfiler.stopSampling) summed by allocating function and package. */
export function summarizeHeapProfile(file: string, top = 12): HeapSummary {
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  let total = 0;
  const stack = [head];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    stack.push(...n.children);
    if (n.selfSize === 0) continue;
    total += n.selfSize;
    const name = n.callFrame.functionName || '(anonymous)';
    const where = n.callFrame.url.replace(/^.*\/(node_modules|services)\//, '$1/');
    const key = `${name} ${where ? `${where}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
    fn.set(key, (fn.get(key) ?? 0) + n.selfSize);
    const pk = packageOf(n.callFrame.url, name);
    pkg.set(pk, (pkg.get(pk) ?? 0) + n.selfSize);
  }
  const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;
  const rank = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, bytes]) => ({ name, mb: mb(bytes), pct: Math.round((bytes / total) * 1000) / 10 }));
  return { mb: mb(total), byFunction: rank(fn), byPackage: rank(pkg) };
}

export function formatHeapProfile(service: string, s: HeapSummary): string {
  const lines = [`${service}: ${s.mb} MB allocated (sampled)`, '  by package:'];
  for (const r of s.byPackage) lines.push(`    ${String(r.pct).padStart(5)}%  ${r.name}`);
  lines.push('  by function (bytes it allocated itself):');
  for (const r of s.byFunction) lines.push(`    ${String(r.pct).padStart(5)}%  ${r.name}`);
  return lines.join('\n');
}

export function formatProfile(service: string, s: ProfileSummary): string {
  const lines = [`${service}: busy ${s.busy_ms} ms, idle ${s.idle_ms} ms`, '  by package:'];
  for (const r of s.byPackage) lines.push(`    ${String(r.pct).padStart(5)}%  ${r.name}`);
  lines.push('  by function (self time):');
  for (const r of s.byFunction) lines.push(`    ${String(r.pct).padStart(5)}%  ${r.name}`);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const f of process.argv.slice(2))
    console.log(
      f.endsWith('.heapprofile')
        ? formatHeapProfile(f, summarizeHeapProfile(f, 20))
        : formatProfile(f, summarizeProfile(f, 20)),
    );
}
