import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensurePnpm, pnpmCommand, pnpmEnv, root } from '../../scripts/bootstrap.mjs';
import { productionPackages, prune } from '../../scripts/prune-node-modules.mjs';

/**
 * What a production image keeps of node_modules (deploy/Dockerfile's deps stage): the service's
 * own production tree as `pnpm list --prod` reports it, nothing else. Checked here without Docker
 * on this workspace's lockfile and compiled code; `npm run test:containers` checks the built
 * images' node_modules the same way.
 */
const services = ['gateway', 'identity', 'ledger', 'claims', 'referrals', 'webhooks'] as const;
const projectOf = (image: string) => (image === 'migrate' ? '@loyalty/runtime' : `@loyalty/${image}`);

const trees = new Map<string, Set<string>>();
function productionTree(image: string): Set<string> {
  const known = trees.get(image);
  if (known) return known;
  ensurePnpm();
  const r = spawnSync('sh', ['-c', pnpmCommand(`list --prod --depth Infinity --json --filter "${projectOf(image)}"`)], {
    cwd: root,
    env: pnpmEnv(),
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  if (r.status !== 0) throw new Error(`pnpm list failed: ${r.stderr}`);
  const tree = productionPackages(JSON.parse(r.stdout));
  trees.set(image, tree);
  return tree;
}

const names = (set: Set<string>) => new Set([...set].map((k) => k.slice(0, k.lastIndexOf('@'))));

/** The npm packages a compiled entry point loads at run time (esbuild left them as imports). */
function externalPackages(file: string): string[] {
  const code = readFileSync(file, 'utf8');
  const specifiers = [
    ...code.matchAll(/\bfrom\s*"([^"]+)"/g),
    ...code.matchAll(/\bimport\s*"([^"]+)"/g),
    ...code.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g),
  ].map((m) => m[1]!);
  const builtins = new Set(builtinModules);
  // Only what can be a module specifier: the patterns also meet strings such as `"a.from", message: "`.
  const specifier = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*(?:\/[\w.@/-]*)?$|^[./]/i;
  return [
    ...new Set(
      specifiers
        .filter((s) => specifier.test(s))
        .filter((s) => !s.startsWith('.') && !s.startsWith('node:') && !builtins.has(s.split('/')[0]!))
        .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!)),
    ),
  ];
}

describe("a service image's production packages", () => {
  it('are its own: no other service’s packages, nothing of the SDK', () => {
    const byService = Object.fromEntries(services.map((s) => [s, names(productionTree(s))]));
    for (const s of services) {
      expect(byService[s]!.has('openapi-fetch'), s).toBe(false);
      expect(byService[s]!.has('preact'), s).toBe(false);
      expect(byService[s]!.has('pg') && byService[s]!.has('nats') && byService[s]!.has('pino'), s).toBe(true);
    }
    expect(byService.gateway!.has('fastify')).toBe(true);
    expect(byService.ledger!.has('fastify')).toBe(false);
    expect(byService.identity!.has('nodemailer')).toBe(true);
    for (const s of services.filter((x) => x !== 'identity')) expect(byService[s]!.has('nodemailer'), s).toBe(false);
    expect(byService.ledger!.has('ioredis')).toBe(false);
    expect(names(productionTree('migrate')).has('node-pg-migrate')).toBe(true);
  }, 240_000); // seven `pnpm list` runs: seconds each, minutes on a loaded machine

  it('hold every package the compiled code loads', () => {
    const entries: [string, string][] = [
      ...services.map((s): [string, string] => [s, path.join(root, 'services', s, 'dist', 'main.js')]),
      ['migrate', path.join(root, 'scripts', 'dist', 'migrate.js')],
    ];
    for (const [image, file] of entries) {
      expect(existsSync(file), `${file} (the suite's global set-up builds it)`).toBe(true);
      const tree = names(productionTree(image));
      const loaded = externalPackages(file);
      expect(loaded.length, image).toBeGreaterThan(0);
      expect(
        loaded.filter((p) => !tree.has(p)),
        image,
      ).toEqual([]);
    }
  }, 240_000);
});

describe('scripts/prune-node-modules.mjs', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'prune-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const pkg = (at: string, name: string, version: string) => {
    mkdirSync(path.join(at, name), { recursive: true });
    writeFileSync(path.join(at, name, 'package.json'), JSON.stringify({ name, version }));
  };

  it('keeps the listed packages wherever they sit, removes the others, their scopes and .bin', () => {
    const nm = path.join(dir, 'node_modules');
    pkg(nm, 'kept', '1.0.0');
    pkg(nm, 'other', '1.0.0');
    pkg(nm, '@scope/kept', '2.0.0');
    pkg(nm, '@gone/x', '1.0.0');
    pkg(nm, 'dep', '2.0.0'); // hoisted for another package
    pkg(path.join(nm, 'kept', 'node_modules'), 'dep', '1.0.0'); // kept's own version
    pkg(path.join(nm, 'other', 'node_modules'), 'dep', '1.0.0');
    pkg(nm, 'string-width-cjs', '4.2.3'); // an alias: npm:string-width@4.2.3
    mkdirSync(path.join(nm, '.bin'));
    const keep = productionPackages([
      {
        dependencies: {
          '@loyalty/runtime': {
            version: 'link:../../libs/runtime',
            dependencies: {
              kept: { version: '1.0.0', dependencies: { dep: { version: '1.0.0' } } },
              '@scope/kept': { version: '2.0.0(peer@1.0.0)' },
              'string-width-cjs': { version: 'npm:string-width@4.2.3' },
            },
          },
        },
      },
    ]);
    expect([...keep].sort()).toEqual(['@scope/kept@2.0.0', 'dep@1.0.0', 'kept@1.0.0', 'string-width-cjs@4.2.3']);
    const removed = prune(nm, keep);
    expect(removed.sort()).toEqual(['@gone/x@1.0.0', 'dep@2.0.0', 'other@1.0.0']);
    expect(readdirSync(nm).sort()).toEqual(['@scope', 'kept', 'string-width-cjs']);
    expect(readdirSync(path.join(nm, 'kept', 'node_modules'))).toEqual(['dep']);
  });
});
