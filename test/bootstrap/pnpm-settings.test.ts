import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensurePnpm, PNPM_SETTINGS, pnpmCommand, pnpmEnv, root } from '../../scripts/bootstrap.mjs';

/**
 * pnpm's settings of this workspace reach pnpm and only pnpm: npm commands in the checkout print
 * no "Unknown project config" warning (there is no .npmrc with pnpm's keys), while the pinned
 * pnpm of the set-up still installs a flat (hoisted) node_modules with peers installed.
 */
/** The environment of a shell in the checkout: nothing of npm's or pnpm's own variables. */
function plainEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(npm|pnpm)_/i.test(k)) env[k] = v;
  return env;
}

describe("the workspace's pnpm settings", () => {
  it('npm commands in the checkout warn about no unknown config', () => {
    const r = spawnSync('npm', ['pkg', 'get', 'name'], { cwd: root, env: plainEnv(), encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('"loyalty-platform"');
    expect(r.stderr).not.toMatch(/Unknown (project|env|user|global) config/);
    const npmrc = path.join(root, '.npmrc');
    if (existsSync(npmrc)) expect(readFileSync(npmrc, 'utf8')).not.toMatch(/node-linker|auto-install-peers/);
  });

  it('the pinned pnpm gets node-linker=hoisted and auto-install-peers=true', () => {
    ensurePnpm();
    expect(PNPM_SETTINGS).toEqual({ npm_config_node_linker: 'hoisted', npm_config_auto_install_peers: 'true' });
    for (const [key, value] of [
      ['node-linker', 'hoisted'],
      ['auto-install-peers', 'true'],
    ]) {
      const r = spawnSync('sh', ['-c', pnpmCommand(`config get ${key}`)], {
        cwd: root,
        env: pnpmEnv(plainEnv()),
        encoding: 'utf8',
      });
      expect(r.stdout.trim(), key).toBe(value);
    }
    // The installed node_modules is the flat layout (what `pnpm install` made with these settings).
    expect(readFileSync(path.join(root, 'node_modules', '.modules.yaml'), 'utf8')).toMatch(/nodeLinker: hoisted/);
  }, 120_000);
});
