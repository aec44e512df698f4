import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * What each compiled service loads when it starts: a package imported at the top of a bundle is
 * loaded and kept for good, however rarely it is used, and counts in the process's resident memory.
 * (The suite's global set-up builds the bundles.)
 */
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const bundle = (service: string) => readFileSync(path.join(root, 'services', service, 'dist', 'main.js'), 'utf8');
const staticImports = (code: string) =>
  new Set([...code.matchAll(/^import\s[^'"]*?from\s*["']([^"']+)["'];?$/gm)].map((m) => m[1]!));

describe('compiled bundles', () => {
  it('the gateway, which has no database, loads neither the PostgreSQL driver nor the migration library', () => {
    const imports = staticImports(bundle('gateway'));
    expect(imports.has('fastify')).toBe(true); // the pattern finds the bundle's imports
    expect(imports.has('pg')).toBe(false);
    expect(imports.has('node-pg-migrate')).toBe(false);
  });

  it('no service loads the migration library at start; it is imported when a migration is applied', () => {
    for (const service of ['identity', 'ledger', 'claims', 'referrals', 'webhooks']) {
      const code = bundle(service);
      expect(staticImports(code).has('pg'), service).toBe(true);
      expect(staticImports(code).has('node-pg-migrate'), service).toBe(false);
      expect(code).toContain('import("node-pg-migrate")');
    }
  });

  it("loading the PostgreSQL driver does not load fetch's undici (pg is patched: its Cloudflare probe built a Response)", () => {
    // A process of its own: what it has loaded is only what importing pg loaded.
    const r = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "await import('pg'); console.log(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('undici'))))",
      ],
      { cwd: path.join(root, 'services', 'ledger', 'dist'), encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([]);
  });
});
