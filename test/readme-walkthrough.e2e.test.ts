import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_TOKEN, startTestSystem, type TestSystem } from './support/system.ts';

/**
 * The README's "Try it with curl" section, run as written: its shell blocks in order in one bash
 * (`set -euo pipefail`), against a system seeded by scripts/seed.ts exactly as `npm start` seeds
 * it. The walkthrough's `api` fails the script on any `"success":false`, so a step that no longer
 * matches the API fails this test.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let sys: TestSystem;
let dir: string;

/** The ```sh blocks between "## Try it with curl" and the next "## " heading. */
function walkthroughBlocks(readme: string): string[] {
  const start = readme.indexOf('\n## Try it with curl\n');
  if (start < 0) throw new Error('README.md has no "Try it with curl" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/**
 * Runs a child process without blocking: the system under test (gateway and services) lives in
 * this process and must go on answering while the child calls it.
 */
function run(
  command: string,
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] });
  dir = mkdtempSync(path.join(tmpdir(), 'loyalty-walkthrough-'));
});
afterAll(async () => {
  await sys?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('README walkthrough', () => {
  it('runs every step of "Try it with curl" with success', { timeout: 180_000 }, async () => {
    const env = { LOYALTY_URL: sys.url, OPERATOR_TOKEN, LOYALTY_DEMO: path.join(dir, 'demo-credentials.json') };
    const seed = await run(process.execPath, ['--import', 'tsx', 'scripts/seed.ts'], env);
    expect(seed.status, seed.stderr).toBe(0);

    const blocks = walkthroughBlocks(readFileSync(path.join(root, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    const script = `set -euo pipefail\n${blocks.join('\n')}\necho WALKTHROUGH-DONE\n`;
    const r = await run('bash', ['-s'], env, script);
    const output = `${r.stdout}\n${r.stderr}`;
    expect(r.status, output).toBe(0);
    expect(r.stdout).toContain('WALKTHROUGH-DONE');
    // Every response printed is a success (api() stops at the first failure; this says which).
    const responses = r.stdout.split('\n').filter((line) => line.startsWith('{'));
    // One response for each `api` line of the walkthrough: none skipped.
    const calls = blocks
      .join('\n')
      .split('\n')
      .filter((line) => line.startsWith('api '));
    expect(calls.length).toBeGreaterThanOrEqual(25);
    expect(responses.length, output).toBe(calls.length);
    if (process.env.WALKTHROUGH_PRINT) console.log(output);
    for (const line of responses) expect(line, output).toMatch(/^\{"success":true/);
  });
});
