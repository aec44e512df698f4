// deploy/Dockerfile: the rules of the image (multi-stage, one SERVICE argument, production
// dependencies only, non-root, health check on the ops port), and its HEALTHCHECK and CMD
// actually run here with the image's node and sh.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_ENV, SERVICE_NODE_OPTIONS } from '../../scripts/node-flags.mjs';
import { defaultOpsPort, root, serviceNames } from './service-configs.ts';

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

/** Instructions of a Dockerfile, continuation lines joined, comments dropped. */
function parseDockerfile(text: string): { preamble: Instruction[]; stages: Stage[] } {
  const logical = text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const preamble: Instruction[] = [];
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { keyword: keyword.toUpperCase(), args };
    if (instruction.keyword === 'FROM') {
      const [, from = '', name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args) ?? [];
      stages.push({ from, name, instructions: [] });
    } else if (stages.length === 0) preamble.push(instruction);
    else stages.at(-1)!.instructions.push(instruction);
  }
  return { preamble, stages };
}

const dockerfile = readFileSync(path.join(root, 'deploy', 'Dockerfile'), 'utf8');
const { preamble, stages } = parseDockerfile(dockerfile);
const final = stages.at(-1)!;
const argsOf = (stage: Stage) => stage.instructions.filter((i) => i.keyword === 'ARG').map((i) => i.args.split('=')[0]);
const one = (stage: Stage, keyword: string) => {
  const found = stage.instructions.filter((i) => i.keyword === keyword);
  expect(found, `${keyword} in stage ${stage.name ?? stage.from}`).toHaveLength(1);
  return found[0]!.args;
};
const healthcheckScript = () => (JSON.parse(one(final, 'HEALTHCHECK').replace(/^.*?CMD\s+/, '')) as string[])[2]!;
const shellCmd = () => one(final, 'CMD');

describe('deploy/Dockerfile', () => {
  it('is multi-stage and runs on a supported Node LTS (24, Debian 12 slim)', () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    expect(preamble).toContainEqual({ keyword: 'ARG', args: 'NODE_IMAGE=node:24-bookworm-slim' });
    expect(final.from).toBe('${NODE_IMAGE}');
    // Even majors are the LTS lines; 20 reached its end of life in April 2026, 22 in April 2027.
    const major = Number(/node:(\d+)/.exec(preamble.map((i) => i.args).join(' '))?.[1]);
    expect(major % 2).toBe(0);
    expect(major).toBeGreaterThanOrEqual(24);
  });

  it('gives pnpm fetch the patches the lockfile names (else ERR_PNPM_PATCH_NOT_FOUND)', () => {
    const lock = readFileSync(path.join(root, 'pnpm-lock.yaml'), 'utf8');
    const patched = [...lock.matchAll(/^\s+path: (patches\/\S+)$/gm)].map((m) => m[1]!);
    expect(patched.length).toBeGreaterThan(0);
    const store = stages.find((s) => s.name === 'store')!;
    const fetchAt = store.instructions.findIndex((i) => i.keyword === 'RUN' && i.args.includes('pnpm fetch'));
    const copied = store.instructions
      .slice(0, fetchAt)
      .filter((i) => i.keyword === 'COPY')
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    expect(fetchAt).toBeGreaterThan(0);
    for (const file of ['pnpm-lock.yaml', 'pnpm-workspace.yaml']) expect(copied).toContain(file);
    for (const file of patched) expect(copied.some((c) => file.startsWith(c.replace(/\/?$/, '/')))).toBe(true);
  });

  it('needs no BuildKit (Debian docker.io builds it with the legacy builder)', () => {
    expect(dockerfile).not.toMatch(/--mount=|^# syntax=|--link\b|<<\w+/m);
  });

  it('installs pnpm at the version of packageManager and builds with scripts/build.mjs from the lockfile', () => {
    const pnpm = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).packageManager as string;
    expect(dockerfile).toContain(`npm install --global ${pnpm}`);
    const build = stages.find((s) => s.name === 'build')!;
    const runs = build.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    expect(runs.some((r) => r.includes('pnpm install') && r.includes('--frozen-lockfile'))).toBe(true);
    expect(runs.some((r) => r.includes('node scripts/build.mjs'))).toBe(true);
  });

  it("gives pnpm the workspace's settings in the environment (no .npmrc: npm would warn about them)", () => {
    const pnpmStage = stages.find((s) => s.name === 'pnpm')!;
    const env = pnpmStage.instructions
      .filter((i) => i.keyword === 'ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).toContain('npm_config_node_linker=hoisted');
    expect(env).toContain('npm_config_auto_install_peers=true');
    expect(dockerfile).not.toContain('.npmrc');
  });

  it("keeps only the service's production tree in its image (pnpm list --prod, then the prune)", () => {
    const deps = stages.find((s) => s.name === 'deps')!;
    expect(argsOf(deps)).toContain('SERVICE');
    const run = deps.instructions.find((i) => i.keyword === 'RUN' && i.args.includes('prune-node-modules'))!.args;
    expect(run).toMatch(/pnpm list --prod --depth Infinity --json --filter "\$\{project\}"/);
    expect(run).toContain('project="@loyalty/${SERVICE}"');
    expect(run).toContain('migrate) project="@loyalty/runtime"');
  });

  it('shares the build stages between services: SERVICE is read only from the dependencies on', () => {
    for (const s of stages.filter((s) => ['pnpm', 'store', 'build'].includes(s.name ?? ''))) {
      expect(argsOf(s), s.name).not.toContain('SERVICE');
      expect(JSON.stringify(s.instructions), s.name).not.toContain('$SERVICE');
      expect(JSON.stringify(s.instructions), s.name).not.toContain('${SERVICE');
    }
    expect(argsOf(final)).toContain('SERVICE');
  });

  it('ships production dependencies only, and only compiled code and migrations', () => {
    const deps = stages.find((s) => s.name === 'deps')!;
    expect(
      deps.instructions.some((i) => i.keyword === 'RUN' && /pnpm install --prod\b.*--frozen-lockfile/.test(i.args)),
    ).toBe(true);
    const copies = final.instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args);
    expect(copies).toEqual(['--from=deps /prod/node_modules ./node_modules', '--from=assemble /app ./']);
    const assemble = stages.find((s) => s.name === 'assemble')!.instructions.find((i) => i.keyword === 'RUN')!.args;
    expect(assemble).toContain('services/${SERVICE}/dist');
    expect(assemble).toContain('services/${SERVICE}/migrations');
    // Every service, and the migration Job's image, can be built; anything else is refused.
    expect(new Set(/(\S+)\)\s+mkdir -p "\/app\/services/.exec(assemble)?.[1]?.split('|'))).toEqual(
      new Set(serviceNames),
    );
    expect(assemble).toMatch(/migrate\)/);
    // The gateway serves the staff console built in the build stage (scripts/build.mjs).
    expect(assemble).toContain(
      'if [ "${SERVICE}" = gateway ]; then mkdir -p /app/console && cp -R console/dist /app/console/dist; fi',
    );
    expect(assemble).toMatch(/\*\) echo .*exit 1/);
  });

  it('runs as a numeric non-root user', () => {
    const user = one(final, 'USER');
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
  });

  it("health-checks each service's default ops port", () => {
    const script = healthcheckScript();
    for (const name of serviceNames) expect(script).toContain(`${name}: ${defaultOpsPort(name)}`);
  });
});

describe('the heap flags of the image', () => {
  it("are the services' production flags of scripts/node-flags.mjs, and valid for node", () => {
    const env = one(final, 'ENV');
    const given = /NODE_OPTIONS="([^"]*)"/.exec(env)?.[1];
    expect(given).toBe(SERVICE_NODE_OPTIONS);
    const r = spawnSync(process.execPath, ['-e', 'console.log(require("v8").getHeapStatistics().heap_size_limit)'], {
      env: { NODE_OPTIONS: given },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(Number(r.stdout) / 2 ** 20).toBeLessThan(150); // the heap limit V8 derives from them
  });
  it("sets the services' malloc environment of scripts/node-flags.mjs", () => {
    const env = one(final, 'ENV');
    for (const [name, value] of Object.entries(SERVICE_ENV)) expect(env).toMatch(new RegExp(`\\b${name}=${value}\\b`));
  });
});

describe('the HEALTHCHECK and CMD of the image, run with node and sh', () => {
  let server: http.Server;
  let port: number;
  let status = 200;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(req.url === '/healthz' ? status : 404);
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Exit code of the HEALTHCHECK command in an environment like the container's. */
  const healthcheck = (env: Record<string, string>) =>
    new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ['-e', healthcheckScript()], { env, stdio: 'ignore' });
      child.on('close', resolve);
    });

  it('is healthy when /healthz answers 200 and unhealthy otherwise', async () => {
    status = 200;
    expect(await healthcheck({ SERVICE: 'ledger', OPS_PORT: String(port) })).toBe(0);
    status = 503;
    expect(await healthcheck({ SERVICE: 'ledger', OPS_PORT: String(port) })).toBe(1);
    // Nothing listening: a free port just closed.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await healthcheck({ SERVICE: 'ledger', OPS_PORT: String(freePort) })).toBe(1);
    // The migration image has no ops port.
    expect(await healthcheck({ SERVICE: 'migrate' })).toBe(0);
  });

  it('starts the compiled service, or the migrations for SERVICE=migrate', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'image-'));
    try {
      mkdirSync(path.join(dir, 'services', 'ledger', 'dist'), { recursive: true });
      mkdirSync(path.join(dir, 'scripts', 'dist'), { recursive: true });
      writeFileSync(path.join(dir, 'services', 'ledger', 'dist', 'main.js'), 'console.log("ledger main")');
      writeFileSync(path.join(dir, 'scripts', 'dist', 'migrate.js'), 'console.log("migrate")');
      const run = (service: string) =>
        spawnSync('sh', ['-c', shellCmd()], {
          cwd: dir,
          env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`, SERVICE: service },
          encoding: 'utf8',
        }).stdout.trim();
      expect(run('ledger')).toBe('ledger main');
      expect(run('migrate')).toBe('migrate');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('.dockerignore', () => {
  const ignored = readFileSync(path.join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  it('keeps host-built artefacts and git history out of the context', () => {
    for (const pattern of ['.git', '**/node_modules', '**/dist', 'var']) expect(ignored).toContain(pattern);
  });

  it('keeps what the build needs', () => {
    for (const needed of [
      'package.json',
      'pnpm-lock.yaml',
      'pnpm-workspace.yaml',
      'patches',
      'libs',
      'services',
      'scripts',
      'deploy/Dockerfile',
    ]) {
      expect(ignored, needed).not.toContain(needed);
    }
  });
});
