// Writes the observability as code: deploy/observability/rules.yaml, the Grafana dashboards in
// deploy/observability/dashboards/, and the ServiceMonitors and PrometheusRule of the production
// overlay, from scripts/observability/{rules,dashboards}.ts. `--check` only says whether the
// files are up to date (a test does the same).
//   node --import tsx scripts/observability.ts [--check]
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { renderAll, root } from './observability/render.ts';

const check = process.argv.includes('--check');
let stale = 0;
for (const [file, content] of renderAll()) {
  const full = path.join(root, file);
  const current = existsSync(full) ? readFileSync(full, 'utf8') : undefined;
  if (current === content) continue;
  stale += 1;
  if (check) console.error(`out of date: ${file}`);
  else {
    mkdirSync(path.dirname(full), { recursive: true });
    writeFileSync(full, content);
    console.log(`wrote ${file}`);
  }
}
if (check && stale > 0) process.exit(1);
