import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNPM_VERSION, root } from '../../scripts/bootstrap.mjs';

/**
 * `npm start` and `npm test` on a laptop whose global pnpm is another major: the set-up
 * (ensurePnpm, installDependencies, runPnpm of scripts/bootstrap.mjs) still installs with the
 * pinned pnpm. A real pnpm 10 and 12 from the npm registry (cached in var/test-tools between runs)
 * come first on PATH; the set-up runs in a small workspace with the checkout's bootstrap.mjs, whose
 * postinstall records which pnpm installed it and which `pnpm` a script calling pnpm gets. The
 * first starts without var/tools (ensurePnpm installs the pinned pnpm with npm); the second reuses
 * the checkout's var/tools when it has the pinned pnpm, to keep the test short. (pnpm 11 does not
 * run on Node 20.)
 */
const GLOBAL_PNPMS = ['10.34.9', '12.21.0'];
const cache = path.join(root, 'var', 'test-tools');

function globalPnpmBin(version: string): string {
  const prefix = path.join(cache, `pnpm-${version}`);
  const bin = path.join(prefix, 'node_modules', '.bin');
  if (!existsSync(path.join(bin, 'pnpm'))) {
    mkdirSync(prefix, { recursive: true });
    writeFileSync(path.join(prefix, 'package.json'), '{ "private": true }\n');
    const r = spawnSync(
      'npm',
      ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `pnpm@${version}`],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`npm install pnpm@${version} failed: ${r.stderr}`);
  }
  return bin;
}

/** The environment of a shell whose PATH starts with another pnpm, without pnpm's own variables. */
function shellWith(bin: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(npm|pnpm)_/i.test(k) && k !== 'PNPM_HOME') env[k] = v;
  env.PATH = `${bin}${path.delimiter}${process.env.PATH ?? ''}`;
  return env;
}

/** A workspace like the platform's: pinned packageManager, a workspace dependency, a pnpm 9 lockfile. */
function workspace(dir: string) {
  mkdirSync(path.join(dir, 'scripts'), { recursive: true });
  mkdirSync(path.join(dir, 'pkgs', 'a'), { recursive: true });
  copyFileSync(path.join(root, 'scripts', 'bootstrap.mjs'), path.join(dir, 'scripts', 'bootstrap.mjs'));
  const pkg = {
    name: 'fixture',
    private: true,
    type: 'module',
    packageManager: JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).packageManager,
    scripts: { postinstall: 'echo "$npm_config_user_agent" > installed-by.txt && pnpm -v >> installed-by.txt' },
    dependencies: { '@fixture/a': 'workspace:*' },
  };
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  writeFileSync(path.join(dir, 'pkgs', 'a', 'package.json'), '{ "name": "@fixture/a", "version": "1.0.0" }\n');
  writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), "packages:\n  - 'pkgs/*'\n");
  writeFileSync(
    path.join(dir, 'pnpm-lock.yaml'),
    [
      "lockfileVersion: '9.0'",
      '',
      'settings:',
      '  autoInstallPeers: true',
      '  excludeLinksFromLockfile: false',
      '',
      'importers:',
      '',
      '  .:',
      '    dependencies:',
      "      '@fixture/a':",
      '        specifier: workspace:*',
      '        version: link:pkgs/a',
      '',
      '  pkgs/a: {}',
      '',
    ].join('\n'),
  );
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the set-up uses the pinned pnpm whatever pnpm is on PATH', () => {
  expect(PNPM_VERSION).toBe(
    JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).packageManager.replace('pnpm@', ''),
  );
  const bins = new Map<string, string>();
  beforeAll(() => {
    for (const v of GLOBAL_PNPMS) bins.set(v, globalPnpmBin(v));
  }, 240_000);

  for (const [i, version] of GLOBAL_PNPMS.entries()) {
    it(`installs with pnpm ${PNPM_VERSION} when pnpm ${version} comes first on PATH`, () => {
      const env = shellWith(bins.get(version)!);
      // The shell's pnpm really is the other one (outside any project, so it does not try to switch).
      const outside = spawnSync('pnpm', ['-v'], { cwd: tmpdir(), env, encoding: 'utf8' });
      expect(outside.stdout.trim()).toBe(version);

      const dir = mkdtempSync(path.join(tmpdir(), 'pinned-pnpm-'));
      dirs.push(dir);
      workspace(dir);
      const tools = path.join(root, 'var', 'tools');
      if (i > 0 && existsSync(path.join(tools, 'node_modules', 'pnpm', 'package.json')))
        cpSync(tools, path.join(dir, 'var', 'tools'), { recursive: true });
      const setup = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "const b = await import('./scripts/bootstrap.mjs'); b.ensurePnpm(); b.installDependencies(); b.runPnpm('-v');",
        ],
        { cwd: dir, env, encoding: 'utf8' },
      );
      expect(setup.status, `${setup.stdout}\n${setup.stderr}`).toBe(0);
      expect(setup.stdout.trim().split('\n').at(-1)).toBe(PNPM_VERSION);
      expect(existsSync(path.join(dir, 'node_modules', '@fixture', 'a', 'package.json'))).toBe(true);
      const [agent, nested] = readFileSync(path.join(dir, 'installed-by.txt'), 'utf8').trim().split('\n');
      expect(agent).toMatch(new RegExp(`^pnpm/${PNPM_VERSION.replaceAll('.', '\\.')} `));
      expect(nested).toBe(PNPM_VERSION); // a script calling `pnpm` gets the pinned one too
    }, 180_000);
  }
});
