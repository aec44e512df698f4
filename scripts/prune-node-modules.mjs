// Keeps in a hoisted node_modules only one workspace project's production packages: the tree
// `pnpm list --prod --depth Infinity --json --filter <project>` reports (pnpm's own reading of the
// lockfile), and removes every other package, at the top level and nested. deploy/Dockerfile runs
// it per image, so a service's image holds its own runtime dependencies and nothing of the other
// services or of the SDK. (pnpm 9 cannot install one project alone with node-linker=hoisted:
// `install --filter` and `deploy` still lay out the whole workspace's packages.)
//
//   node scripts/prune-node-modules.mjs <node_modules> <pnpm list JSON file>
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** `name@version` of every package in the listed projects' trees (workspace links are walked through, not kept). */
export function productionPackages(list) {
  const keep = new Set();
  const walk = (deps) => {
    for (const [name, dep] of Object.entries(deps ?? {})) {
      const version = String(dep.version);
      if (version.startsWith('link:')) {
        walk(dep.dependencies);
        continue;
      }
      // An alias (`npm:real@1.2.3`) sits in node_modules under its alias name; peers suffix `(...)`.
      const exact = (version.startsWith('npm:') ? version.slice(version.lastIndexOf('@') + 1) : version).replace(
        /\(.*$/,
        '',
      );
      const key = `${name}@${exact}`;
      if (keep.has(key)) continue;
      keep.add(key);
      walk(dep.dependencies);
      walk(dep.optionalDependencies);
    }
  };
  for (const project of list) {
    walk(project.dependencies);
    walk(project.optionalDependencies);
  }
  return keep;
}

/** Removes from `modulesDir` (recursively) every package not in `keep`, and the `.bin` links; returns what was removed. */
export function prune(modulesDir, keep) {
  const removed = [];
  const visit = (dir) => {
    for (const entry of readdirSync(dir)) {
      if (entry === '.bin') {
        rmSync(path.join(dir, entry), { recursive: true, force: true });
        continue;
      }
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? readdirSync(path.join(dir, entry)).map((n) => `${entry}/${n}`) : [entry];
      for (const name of names) {
        const pkgDir = path.join(dir, name);
        const manifest = path.join(pkgDir, 'package.json');
        const version = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : undefined;
        if (!keep.has(`${name}@${version}`)) {
          rmSync(pkgDir, { recursive: true, force: true });
          removed.push(`${name}@${version}`);
          continue;
        }
        const nested = path.join(pkgDir, 'node_modules');
        if (existsSync(nested)) visit(nested);
      }
      if (entry.startsWith('@') && readdirSync(path.join(dir, entry)).length === 0)
        rmSync(path.join(dir, entry), { recursive: true });
    }
  };
  visit(modulesDir);
  return removed;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [modulesDir, listFile] = process.argv.slice(2);
  if (!modulesDir || !listFile) {
    console.error('usage: node scripts/prune-node-modules.mjs <node_modules> <pnpm list --json file>');
    process.exit(2);
  }
  const keep = productionPackages(JSON.parse(readFileSync(listFile, 'utf8')));
  const removed = prune(modulesDir, keep);
  console.log(`kept ${keep.size} production packages, removed ${removed.length} others`);
}
