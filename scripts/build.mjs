// Compile every service (and the admin CLI) to one JavaScript file each with esbuild.
// Workspace libraries (@loyalty/*) are bundled in; npm packages stay external and are loaded
// from node_modules at run time, so `node services/<name>/dist/main.js` is the production form.
import { build } from 'esbuild';
import { readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const externalNpm = {
  name: 'external-npm',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('@loyalty/')) return undefined; // bundle workspace libraries
      return { path: args.path, external: true };
    });
  },
};

const entries = [];
for (const name of readdirSync(path.join(root, 'services'))) {
  const main = path.join(root, 'services', name, 'src', 'main.ts');
  if (existsSync(main)) entries.push({ in: main, out: path.join(root, 'services', name, 'dist', 'main.js') });
}
for (const script of ['admin-cli', 'migrate']) {
  entries.push({
    in: path.join(root, 'scripts', `${script}.ts`),
    out: path.join(root, 'scripts', 'dist', `${script}.js`),
  });
}

await Promise.all(
  entries.map((e) =>
    build({
      entryPoints: [e.in],
      outfile: e.out,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      sourcemap: true,
      logLevel: 'warning',
      plugins: [externalNpm],
    }),
  ),
);
console.log(`built ${entries.length} entry points`);
