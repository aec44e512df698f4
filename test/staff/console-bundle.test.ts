import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

/**
 * The built console (the test set-up runs scripts/build.mjs): it carries the staff contracts' zod
 * schemas to check every answer, which must stay cheap and must load in the browsers it targets.
 */
const app = readFileSync(path.resolve(import.meta.dirname, '../../console/dist/assets/app.js'), 'utf8');

describe('console bundle', () => {
  it('stays small: the contracts import zod as a namespace, so the bundler leaves out what is unused', () => {
    // About 50 KB today (scripts/build.mjs leaves out the contracts' prose and unused tables). `import { z } from 'zod'` in a bundled contract brings every locale of
    // zod and its JSON Schema converters: about 95 KB more.
    expect(gzipSync(app).length).toBeLessThan(64 * 1024);
  });

  it('has no regular-expression lookbehind (Safari before 16.4 cannot parse it, and the whole app would not start)', () => {
    expect(app).not.toMatch(/\(\?<[=!]/);
  });
});
