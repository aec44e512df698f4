import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * `npm run bench` checks its NATS before anything else: one that does not answer is a one-line
 * message saying what to do and exit status 1, not a NatsError stack trace after minutes of set-up.
 */
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('npm run bench without its NATS', () => {
  it('says NATS does not answer and how to start it, without a stack trace, and exits 1', async () => {
    const port = await closedPort();
    const started = Date.now();
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--duration', '1'], {
      cwd: repo,
      env: { ...process.env, NATS_URL: `nats://127.0.0.1:${port}` },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr.trim()).toMatch(
      new RegExp(
        `^npm run bench: NATS does not answer at nats://127\\.0\\.0\\.1:${port} \\(CONNECTION_REFUSED\\)\\. .*npm start`,
      ),
    );
    expect(r.stderr).not.toMatch(/NatsError|\n\s+at /);
    // Before the build, the database and the CPU calibration: it fails at once.
    expect(r.stdout).not.toMatch(/building|starting identity/);
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 90_000);
});
