// Compile every service (and the admin CLI) to one JavaScript file each with esbuild.
// Workspace libraries (@loyalty/*) are bundled in; npm packages stay external and are loaded
// from node_modules at run time, so `node services/<name>/dist/main.js` is the production form.
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import ts from 'typescript';

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

// The gateway's OpenAPI documents, generated from the contracts once here rather than at each
// start (services/gateway/src/openapi-documents.ts): a bundled writer, run, then removed.
{
  const writer = path.join(root, 'services', 'gateway', 'dist', 'write-openapi.mjs');
  await build({
    entryPoints: [path.join(root, 'services', 'gateway', 'src', 'write-openapi.ts')],
    outfile: writer,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    plugins: [externalNpm],
  });
  await import(pathToFileURL(writer).href);
  rmSync(writer);
}

// The staff console (the workspace package @loyalty/console, console/src, Preact): one browser
// bundle (app.js + app.css) beside its index.html in console/dist, which the gateway serves at
// /console. Everything it loads is in that folder: no CDN, so it works offline. Its npm packages and
// the staff contracts' zod schemas (@loyalty/contracts/staff, which check every answer) are bundled.
//
// The contracts' prose (`.describe('...')` of a schema, an operation's `summary`) is for the
// OpenAPI documents; the console never shows it, so its copy of the contracts leaves it out: the
// plugin below rewrites the contract sources with TypeScript's own parser and printer (no text
// matching), which keeps the bundle about a fifth smaller gzipped. Checks, messages and types stay.
const withoutProse = {
  name: 'contracts-without-prose',
  setup(b) {
    const contracts = path.join(root, 'libs', 'contracts', 'src') + path.sep;
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (!args.path.startsWith(contracts)) return undefined;
      const source = ts.createSourceFile(args.path, readFileSync(args.path, 'utf8'), ts.ScriptTarget.Latest, true);
      const isText = (n) => ts.isStringLiteralLike(n) || ts.isTemplateExpression(n);
      const strip = (ctx) => (node) => {
        const visit = (n) => {
          // schema.describe('text') -> schema
          if (
            ts.isCallExpression(n) &&
            ts.isPropertyAccessExpression(n.expression) &&
            n.expression.name.text === 'describe' &&
            n.arguments.length === 1 &&
            isText(n.arguments[0])
          )
            return ts.visitNode(n.expression.expression, visit);
          // summary: 'text' -> summary: ''
          if (
            ts.isPropertyAssignment(n) &&
            ts.isIdentifier(n.name) &&
            n.name.text === 'summary' &&
            isText(n.initializer)
          )
            return ctx.factory.updatePropertyAssignment(n, n.name, ctx.factory.createStringLiteral(''));
          const out = ts.visitEachChild(n, visit, ctx);
          // A module-level constant (a schema, an operation table) has no effect beyond its value:
          // built in a function call marked pure, it is left out when the console does not use it.
          if (
            ts.isVariableDeclaration(out) &&
            out.initializer &&
            ts.isVariableStatement(n.parent.parent) &&
            ts.isSourceFile(n.parent.parent.parent)
          ) {
            const f = ctx.factory;
            const call = f.createCallExpression(
              f.createParenthesizedExpression(
                f.createArrowFunction(undefined, undefined, [], undefined, undefined, out.initializer),
              ),
              undefined,
              [],
            );
            ts.addSyntheticLeadingComment(call, ts.SyntaxKind.MultiLineCommentTrivia, ' @__PURE__ ', false);
            return f.updateVariableDeclaration(out, out.name, out.exclamationToken, out.type, call);
          }
          return out;
        };
        return ts.visitNode(node, visit);
      };
      const [out] = ts.transform(source, [strip]).transformed;
      return { contents: ts.createPrinter().printFile(out), loader: 'ts' };
    });
  },
};
const consoleDist = path.join(root, 'console', 'dist');
mkdirSync(path.join(consoleDist, 'assets'), { recursive: true });
await build({
  entryPoints: [path.join(root, 'console', 'src', 'main.tsx')],
  outfile: path.join(consoleDist, 'assets', 'app.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  // Browsers of the last years (tablets included): Safari 15, Chromium/Edge 100, Firefox 100.
  target: ['es2020', 'safari15', 'chrome100', 'firefox100'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  sourcemap: true,
  logLevel: 'warning',
  plugins: [withoutProse],
});
copyFileSync(path.join(root, 'console', 'index.html'), path.join(consoleDist, 'index.html'));
const appJs = path.join(consoleDist, 'assets', 'app.js');
const kb = (n) => `${(n / 1024).toFixed(0)} KB`;
console.log(
  `built ${entries.length} entry points and the staff console (app.js ${kb(statSync(appJs).size)}, ${kb(gzipSync(readFileSync(appJs)).length)} gzipped)`,
);
