// `npm test`: the whole suite on a fresh machine. Installs what is missing, starts the installed
// PostgreSQL, NATS and Redis that are stopped, installs Chromium for the console's browser tests
// where it can, fetches promtool for the alert rule tests, type-checks and lints everything, then runs vitest;
// its global set-up (test/support/global-setup.ts) runs the servers that are still missing as
// containers when a Docker engine answers, or says what to install.
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  checkNode,
  ensureChromium,
  ensurePromtool,
  ensurePnpm,
  installDependencies,
  pnpmCommand,
  pnpmEnv,
  root,
  runPnpm,
  startLocalServers,
  step,
} from './bootstrap.mjs';

checkNode();
ensurePnpm();
installDependencies();
await startLocalServers();
ensureChromium();
ensurePromtool();
step('type-checking and linting (npm run check)');
runPnpm('run --silent check');
step('running the test suite (vitest)');
const results = path.join(root, 'var', 'test-results.json');
const extra = process.argv.slice(2).join(' ');
const r = spawnSync(
  'sh',
  ['-c', pnpmCommand(`exec vitest run --reporter=default --reporter=json --outputFile.json=${results} ${extra}`)],
  { stdio: 'inherit', cwd: root, env: pnpmEnv() },
);
if (existsSync(results)) {
  const json = JSON.parse(readFileSync(results, 'utf8'));
  console.log(`\n${json.numPassedTests} passed, ${json.numFailedTests} failed`);
}
process.exit(r.status ?? 1);
