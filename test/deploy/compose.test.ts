// deploy/compose.yaml: valid against the Compose Specification JSON schema (the copy shipped in
// the composeverter package), after YAML merge keys and ${VAR:-default} interpolation are resolved
// as `docker compose` resolves them; and complete: every service built from deploy/Dockerfile,
// every container health-checked, start order by health, configuration the services accept.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import bcrypt from 'bcryptjs';
import composeverter from 'composeverter';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { natsPermissions, natsServerConfig, natsUsers, type NatsUser } from '@loyalty/runtime';
import {
  configProblems,
  databaseServices,
  defaultOpsPort,
  requiredVariablesOf,
  root,
  serviceNames,
  variablesOf,
} from './service-configs.ts';

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string; args?: Record<string, string> };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[]; interval?: string };
  stop_grace_period?: string;
  stop_signal?: string;
}
interface Compose {
  name?: string;
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const composeFile = path.join(root, 'deploy', 'compose.yaml');

/** The Compose Specification schema. The package stores its regular-expression formats as regex
 * literals turned into strings ("/^...$/"); strip the slashes to get the patterns back. */
function composeValidator(): ValidateFunction {
  const schema = composeverter.getDockerComposeSchemaWithoutFormats() as Record<string, unknown>;
  const repair = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(repair);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' && typeof value === 'string' && /^\/.+\/$/.test(value))
        (node as Record<string, unknown>)[key] = value.slice(1, -1);
      else repair(value);
    }
  };
  repair(schema);
  // The published schema is not written for Ajv's strict mode (e.g. `required` without `type`).
  return new Ajv({ allErrors: true, strict: false }).compile(schema);
}

/** Variables named by ${...}: whether each has a default, so `up` works with none set. */
interface Reference {
  name: string;
  hasDefault: boolean;
}

/** Resolve ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, $VAR and $$ as Compose does. */
function interpolate(value: unknown, env: Record<string, string>, refs: Reference[]): unknown {
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env, refs));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env, refs)]));
  if (typeof value !== 'string') return value;
  return value.replace(
    /\$(\$|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g,
    (_all, body: string, braced?: string, bare?: string) => {
      if (body === '$') return '$';
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?$/s.exec(braced ?? bare ?? '');
      if (!m) throw new Error(`invalid interpolation \${${braced}} in ${value}`);
      const [, name, op, arg = ''] = m as unknown as [string, string, string | undefined, string | undefined];
      refs.push({ name, hasDefault: op === ':-' || op === '-' || op === ':+' || op === '+' });
      const set = env[name];
      const empty = set === undefined || (op?.startsWith(':') && set === '');
      if (op === ':-' || op === '-') return empty ? arg : set!;
      if (op === ':?' || op === '?') {
        if (empty) throw new Error(`${name} is required: ${arg}`);
        return set!;
      }
      if (op === ':+' || op === '+') return empty ? '' : arg;
      return set ?? '';
    },
  );
}

/** Read a Compose file as `docker compose` would on a machine with no variables set. */
function load(text: string): { compose: Compose; refs: Reference[] } {
  const doc = parseDocument(text, { merge: true });
  if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('; '));
  const refs: Reference[] = [];
  return { compose: interpolate(doc.toJS(), {}, refs) as Compose, refs };
}

const validate = composeValidator();
const schemaErrors = (data: unknown) =>
  validate(data) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
const text = readFileSync(composeFile, 'utf8');
const { compose, refs } = load(text);
const infrastructure = ['postgres', 'nats', 'redis', 'mailpit'];
/**
 * Started only with `--profile observability`: the trace pipeline (collector and viewer), and
 * Prometheus with Grafana (the alert rules and dashboards of deploy/observability).
 */
const observability = ['otel-collector', 'jaeger', 'prometheus', 'grafana'];
const durationMs = (d: string) => Number(/^(\d+)s$/.exec(d)?.[1] ?? NaN) * 1000;

describe('deploy/compose.yaml', () => {
  it('is valid against the Compose Specification schema', () => {
    expect(schemaErrors(compose)).toEqual([]);
  });

  it('runs with no variables set: every ${VAR} has a default', () => {
    expect(refs.length).toBeGreaterThan(0);
    expect(refs.filter((r) => !r.hasDefault)).toEqual([]);
  });

  it('has the infrastructure: postgres:16, NATS 2.10 with JetStream on a named volume, redis:7, Mailpit', () => {
    expect(compose.services.postgres!.image).toBe('postgres:16');
    expect(compose.services.redis!.image).toBe('redis:7');
    const nats = compose.services.nats!;
    expect(nats.image).toMatch(/^nats:2\.10(-|$)/);
    expect(nats.command).toEqual(['--config', '/etc/nats/loyalty/auth.conf', '-m', '8222']);
    expect(nats.volumes).toContain('./nats:/etc/nats/loyalty:ro');
    expect(nats.volumes).toContain('nats-data:/data');
    expect(compose.volumes).toHaveProperty('nats-data');
    expect(compose.services.mailpit!.image).toMatch(/^axllent\/mailpit(:|$)/);
    expect(compose.services.mailpit!.ports).toContain('8025:8025');
    expect(compose.services.identity!.environment!.SMTP_URL).toBe('smtp://mailpit:1025');
  });

  it('builds every service from deploy/Dockerfile with its SERVICE argument and the repository as context', () => {
    for (const name of serviceNames) {
      const s = compose.services[name];
      expect(s, name).toBeDefined();
      expect(path.resolve(path.dirname(composeFile), s!.build!.context)).toBe(root);
      expect(s!.build!.dockerfile).toBe('deploy/Dockerfile');
      expect(s!.build!.args).toEqual({ SERVICE: name });
      expect(s!.image).toBe(`loyalty/${name}:dev`);
    }
    expect(Object.keys(compose.services).sort()).toEqual([...infrastructure, ...observability, ...serviceNames].sort());
    expect(compose.services.gateway!.ports).toEqual(['3000:3000']);
  });

  it('health-checks every container, the services on /readyz of their ops port', () => {
    // The optional trace pipeline's images have no shell or client to check with; nothing waits on them.
    for (const [name, s] of Object.entries(compose.services).filter(([n]) => !observability.includes(n))) {
      expect(s.healthcheck?.test?.length, name).toBeGreaterThan(1);
      expect(['CMD', 'CMD-SHELL']).toContain(s.healthcheck!.test[0]);
    }
    for (const name of serviceNames) {
      const port = compose.services[name]!.environment!.OPS_PORT;
      expect(Number(port)).toBe(defaultOpsPort(name));
      expect(compose.services[name]!.healthcheck!.test.join(' ')).toContain(`http://127.0.0.1:${port}/readyz`);
    }
  });

  it('starts each container after what it needs is healthy, without cycles', () => {
    const needs: Record<string, string[]> = {
      gateway: ['nats', 'redis', ...serviceNames.filter((s) => s !== 'gateway')],
      identity: ['postgres', 'nats', 'mailpit'],
    };
    for (const name of databaseServices) needs[name] = [...new Set([...(needs[name] ?? []), 'postgres', 'nats'])];
    for (const [name, deps] of Object.entries(needs))
      expect(Object.keys(compose.services[name]!.depends_on ?? {}).sort(), name).toEqual(deps.sort());
    for (const s of Object.values(compose.services)) {
      for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
        expect(compose.services[dep]).toBeDefined();
        if (!observability.includes(dep)) expect(condition).toBe('service_healthy');
      }
    }
    const visiting = new Set<string>();
    const visit = (name: string): void => {
      expect(visiting.has(name), `cycle through ${name}`).toBe(false);
      visiting.add(name);
      for (const dep of Object.keys(compose.services[name]!.depends_on ?? {})) visit(dep);
      visiting.delete(name);
    };
    Object.keys(compose.services).forEach(visit);
  });

  it('gives each service only variables it reads, all it requires, and values it accepts', () => {
    for (const name of serviceNames) {
      const env = compose.services[name]!.environment ?? {};
      expect(
        Object.keys(env).filter((v) => !variablesOf(name).includes(v)),
        name,
      ).toEqual([]);
      expect(
        requiredVariablesOf(name).filter((v) => !(v in env)),
        name,
      ).toEqual([]);
      expect(configProblems(name, env)).toEqual([]);
      if (databaseServices.includes(name)) expect(env.DATABASE_URL).toMatch(/@postgres:5432\//);
      expect(env.NATS_URL).toBe('nats://nats:4222');
      // Docker waits stop_grace_period before SIGKILL: longer than the service's own bound.
      expect(durationMs(compose.services[name]!.stop_grace_period!)).toBeGreaterThan(Number(env.SHUTDOWN_TIMEOUT_MS));
    }
  });
});

describe('deploy/compose.yaml with Compose 1.29 and v2', () => {
  it('has no top-level name (Compose 1.29 refuses it; the project is -p loyalty)', () => {
    expect(compose).not.toHaveProperty('name');
    expect(compose).not.toHaveProperty('version');
  });

  // Where a Compose is installed, it must accept the file as it is (offline: `config` only parses).
  const installed = (cmd: string[]) =>
    spawnSync(cmd[0]!, [...cmd.slice(1), 'version'], { encoding: 'utf8' }).status === 0;
  it.each([
    ['docker-compose (1.29 on Debian)', ['docker-compose']],
    ['docker compose (v2)', ['docker', 'compose']],
  ])('is accepted by %s when installed', (_name, cmd) => {
    if (!installed(cmd)) return;
    const r = spawnSync(cmd[0]!, [...cmd.slice(1), '-p', 'loyalty', '-f', composeFile, 'config', '-q'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(r.status, r.stderr).toBe(0);
  });
});

describe('the NATS server of compose (deploy/nats)', () => {
  const natsDir = path.join(root, 'deploy', 'nats');
  const auth = readFileSync(path.join(natsDir, 'auth.conf'), 'utf8');
  const passwords = JSON.parse(readFileSync(path.join(natsDir, 'compose-passwords.json'), 'utf8')) as Record<
    NatsUser,
    string
  >;
  const users = parseUsers(auth);

  it('reads the generated auth.conf, runs JetStream on the nats-data volume, health endpoint on 8222', () => {
    expect(compose.services.nats!.command).toEqual(['--config', '/etc/nats/loyalty/auth.conf', '-m', '8222']);
    expect(auth).toMatch(/^jetstream: \{ store_dir: "\/data" \}$/m);
    expect(auth).toMatch(/^listen: "0\.0\.0\.0:4222"$/m);
    expect(compose.services.nats!.healthcheck!.test.join(' ')).toContain('127.0.0.1:8222/healthz');
  });

  it('stops NATS with SIGINT, on which nats-server exits 0 (on the default SIGTERM it exits 1)', () => {
    expect(compose.services.nats!.stop_signal).toBe('SIGINT');
  });

  it('is what the generator makes for root `loyalty` (same users, same permissions)', () => {
    const generated = parseUsers(
      natsServerConfig({ root: 'loyalty', passwords, host: '0.0.0.0', port: 4222, storeDir: '/data', bcryptCost: 4 }),
    );
    const withoutHash = (u: ParsedUser[]) => u.map(({ hash: _hash, ...rest }) => rest);
    expect(withoutHash(users)).toEqual(withoutHash(generated));
    expect(users.map((u) => u.user)).toEqual([...natsUsers]);
    for (const u of users) {
      const p = natsPermissions('loyalty', u.user as NatsUser);
      expect(u.publish, u.user).toEqual(p.publish);
      expect(u.subscribe, u.user).toEqual(p.subscribe);
      expect(u.allowResponses, u.user).toBe(p.allowResponses);
    }
  });

  it("gives each service a NATS user whose default password verifies against that user's hash", () => {
    expect(serviceNames).toEqual([...natsUsers].sort());
    for (const name of serviceNames) {
      const env = compose.services[name]!.environment!;
      expect(env.NATS_USER).toBe(name);
      const hash = users.find((u) => u.user === name)!.hash;
      expect(bcrypt.compareSync(env.NATS_PASSWORD!, hash), name).toBe(true);
      expect(env.NATS_PASSWORD, name).toBe(passwords[name as NatsUser]);
      // Another user's password must not open this account (the hashes are not all one).
      const other = serviceNames.find((s) => s !== name)!;
      expect(bcrypt.compareSync(compose.services[other]!.environment!.NATS_PASSWORD!, hash), name).toBe(false);
    }
  });
});

interface ParsedUser {
  user: string;
  hash: string;
  publish: string[];
  subscribe: string[];
  allowResponses: boolean;
}

/** The users of a configuration written by natsServerConfig (its layout, one field a line). */
function parseUsers(config: string): ParsedUser[] {
  return [...config.matchAll(/\{\n\s+user: "([^"]+)"\n\s+password: "([^"]+)"\n([\s\S]*?)\n {4}\}/g)].map((m) => {
    const body = m[3]!;
    const list = (kind: string): string[] =>
      JSON.parse(new RegExp(`${kind}: \\{ allow: (\\[.*\\]) \\}`).exec(body)?.[1] ?? '[]') as string[];
    return {
      user: m[1]!,
      hash: m[2]!,
      publish: list('publish'),
      subscribe: list('subscribe'),
      allowResponses: /allow_responses: true/.test(body),
    };
  });
}

describe('the Compose validation rejects what is broken', () => {
  const minimal = 'services:\n  api:\n    image: example\n';

  it('accepts a minimal valid file (control)', () => {
    expect(schemaErrors(load(minimal).compose)).toEqual([]);
  });

  it.each([
    ['a misspelt service key', `${minimal}    healthchek:\n      test: [CMD, "true"]\n`],
    ['a duration without a unit', `${minimal}    healthcheck:\n      test: [CMD, "true"]\n      interval: 5\n`],
    ['an unknown depends_on condition', `${minimal}    depends_on:\n      db:\n        condition: service_ready\n`],
    ['a port mapping that is not one', `${minimal}    ports: ["http:web"]\n`],
    ['an unknown top-level key', `${minimal}servics: {}\n`],
  ])('rejects %s', (_what, broken) => {
    expect(schemaErrors(load(broken).compose)).not.toEqual([]);
  });

  it('resolves merge keys and interpolation like Compose', () => {
    const { compose: c, refs: r } = load(
      'x-env: &env\n  A: "1"\nservices:\n  api:\n    image: "example:${TAG:-1.0}"\n    environment:\n      <<: *env\n      B: $$HOME\n      C: ${UNSET}\n',
    );
    expect(c.services.api).toEqual({ image: 'example:1.0', environment: { A: '1', B: '$HOME', C: '' } });
    expect(r).toEqual([
      { name: 'TAG', hasDefault: true },
      { name: 'UNSET', hasDefault: false },
    ]);
  });
});
