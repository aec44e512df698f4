// deploy/k8s: the base and the rendered production overlay are valid Kubernetes objects (API
// schemas, no unknown fields) and follow the platform's rules (probes on the ops port,
// resources, non-root, graceful stop, autoscaling, disruption budgets, migration Job).
// Offline: schemas come from the kubernetes-models package, rendering from ./kustomize.ts.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { containersOf, idOf, kustomize, parseManifests, podSpecOf, type Manifest } from './kustomize.ts';
import { schemaProblems, unknownFieldProblems } from './k8s-schema.ts';
import {
  configProblems,
  defaultOpsPort,
  migrateVariables,
  requiredVariablesOf,
  root,
  serviceNames,
  variablesOf,
} from './service-configs.ts';

const baseDir = path.join(root, 'deploy', 'k8s', 'base');
const productionDir = path.join(root, 'deploy', 'k8s', 'overlays', 'production');
const autoscaled = ['gateway', 'ledger'];

type Container = ReturnType<typeof containersOf>[number] & {
  ports?: { name?: string; containerPort: number }[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
  }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    runAsNonRoot?: boolean;
    runAsUser?: number;
    privileged?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  lifecycle?: { preStop?: { exec?: { command?: string[] } } };
  command?: string[];
};
interface Probe {
  httpGet?: { path?: string; port?: number | string };
}
interface PodSpec {
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
}

/** The TypeScript sources under a folder, concatenated (to find the names a service declares). */
const readSources = (dir: string): string =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => readFileSync(path.join(e.parentPath, e.name), 'utf8'))
    .join('\n');

const find = (ms: Manifest[], kind: string, name: string) =>
  ms.find((m) => m.kind === kind && m.metadata.name === name);
const mainContainer = (m: Manifest) => containersOf(m)[0] as Container;
const podLabels = (m: Manifest) =>
  (m.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** CPU in millicores or memory in bytes. */
function quantity(q: string | number | undefined): number {
  if (q === undefined) return NaN;
  const m = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) return NaN;
  const factor: Record<string, number> = {
    m: 1,
    '': 1000,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
  };
  return Number(m[1]) * factor[m[2] ?? '']!;
}

/** The environment a container gets: literal values, config maps in full, and secret references. */
function environmentOf(c: Container, ms: Manifest[]): { env: Record<string, string>; problems: string[] } {
  const env: Record<string, string> = {};
  const problems: string[] = [];
  const configMap = (name: string) =>
    find(ms, 'ConfigMap', name) as (Manifest & { data?: Record<string, string> }) | undefined;
  for (const from of c.envFrom ?? []) {
    if (from.secretRef)
      problems.push(`${c.name}: takes a whole Secret (${from.secretRef.name}); name the keys it needs instead`);
    if (!from.configMapRef) continue;
    const cm = configMap(from.configMapRef.name);
    if (!cm) problems.push(`${c.name}: ConfigMap ${from.configMapRef.name} is not part of the render`);
    Object.assign(env, cm?.data ?? {});
  }
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef)
      // A key-encryption key must be 32 bytes in base64 to pass the config check; any other secret a long string.
      env[e.name] = e.valueFrom.secretKeyRef.key.startsWith('SECRETS_KEY')
        ? Buffer.alloc(32, 1).toString('base64')
        : `secret-${e.valueFrom.secretKeyRef.key}-placeholder-value`;
    else if (e.valueFrom?.configMapKeyRef) {
      const { name, key } = e.valueFrom.configMapKeyRef;
      const value = configMap(name)?.data?.[key];
      if (value === undefined)
        problems.push(`${c.name}: ${e.name} refers to ConfigMap ${name} key ${key}, which does not exist`);
      else env[e.name] = value;
    } else problems.push(`${c.name}: ${e.name} has no value`);
  }
  return { env, problems };
}

/** Everything the platform requires of one service's Deployment (empty when it complies). */
function deploymentProblems(service: string, ms: Manifest[], secretKeys: string[]): string[] {
  const problems: string[] = [];
  const d = find(ms, 'Deployment', service);
  if (!d) return [`no Deployment ${service}`];
  const pod = podSpecOf(d) as PodSpec;
  const containers = containersOf(d) as Container[];
  if (containers.length !== 1) problems.push(`${service}: expected one container`);
  const c = containers[0]!;

  // Probes on the ops port, which is the port the service really listens on.
  const opsPort = c.ports?.find((p) => p.name === 'ops');
  if (!opsPort) problems.push(`${service}: no container port named ops`);
  else if (
    opsPort.containerPort !== defaultOpsPort(service) &&
    c.env?.find((e) => e.name === 'OPS_PORT')?.value !== String(opsPort.containerPort)
  ) {
    problems.push(`${service}: ops port ${opsPort.containerPort} is neither the service's default nor its OPS_PORT`);
  }
  const onOps = (p?: Probe) => p?.httpGet?.port === 'ops' || p?.httpGet?.port === opsPort?.containerPort;
  if (c.readinessProbe?.httpGet?.path !== '/readyz' || !onOps(c.readinessProbe))
    problems.push(`${service}: readiness probe must be GET /readyz on the ops port`);
  if (c.livenessProbe?.httpGet?.path !== '/healthz' || !onOps(c.livenessProbe))
    problems.push(`${service}: liveness probe must be GET /healthz on the ops port`);
  if (c.startupProbe && !onOps(c.startupProbe)) problems.push(`${service}: startup probe must use the ops port`);

  // Resources: requests and limits for CPU and memory, requests within limits.
  for (const r of ['cpu', 'memory']) {
    const request = quantity(c.resources?.requests?.[r]);
    const limit = quantity(c.resources?.limits?.[r]);
    if (!(request > 0) || !(limit > 0)) problems.push(`${service}: needs ${r} request and limit`);
    else if (request > limit) problems.push(`${service}: ${r} request above its limit`);
  }

  // Least privilege.
  const sc = c.securityContext ?? {};
  if (pod.securityContext?.runAsNonRoot !== true && sc.runAsNonRoot !== true)
    problems.push(`${service}: runAsNonRoot is not set`);
  if (pod.securityContext?.runAsUser === 0 || sc.runAsUser === 0) problems.push(`${service}: runs as root`);
  if (sc.allowPrivilegeEscalation !== false) problems.push(`${service}: allowPrivilegeEscalation must be false`);
  if (sc.readOnlyRootFilesystem !== true) problems.push(`${service}: readOnlyRootFilesystem must be true`);
  if (sc.privileged) problems.push(`${service}: privileged`);
  if (!sc.capabilities?.drop?.includes('ALL') || (sc.capabilities.add ?? []).length > 0)
    problems.push(`${service}: must drop ALL capabilities and add none`);

  // Runs the compiled service.
  if (!isDeepStrictEqual(c.command, ['node', `services/${service}/dist/main.js`]))
    problems.push(`${service}: command must be node services/${service}/dist/main.js`);

  // Environment: only variables the service reads, every required one, values it accepts.
  const { env, problems: envProblems } = environmentOf(c, ms);
  problems.push(...envProblems.map((p) => `${service}: ${p}`));
  const known = new Set(variablesOf(service));
  for (const name of Object.keys(env))
    if (!known.has(name)) problems.push(`${service}: gets ${name}, which it does not read`);
  for (const name of requiredVariablesOf(service))
    if (!(name in env)) problems.push(`${service}: required ${name} is not given`);
  problems.push(...configProblems(service, env));
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (!ref) continue;
    // The shared Secret, or this service's own NATS user (never another service's).
    const shared = ref.name === 'loyalty-secrets' && secretKeys.includes(ref.key);
    const ownNatsUser = ref.name === `nats-${service}` && ['NATS_USER', 'NATS_PASSWORD'].includes(ref.key);
    if (!shared && !ownNatsUser)
      problems.push(`${service}: secret ${ref.name}/${ref.key} is not in the Secret template`);
  }
  if (Number(env.OPS_PORT ?? defaultOpsPort(service)) !== opsPort?.containerPort)
    problems.push(`${service}: OPS_PORT and the ops container port differ`);

  // Graceful stop: the pod outlives the preStop pause plus the service's own shutdown bound.
  const preStop = c.lifecycle?.preStop?.exec?.command;
  const pause = preStop?.[0] === 'sleep' ? Number(preStop[1]) : 0;
  const shutdownMs = Number(env.SHUTDOWN_TIMEOUT_MS ?? 10_000);
  const grace = pod.terminationGracePeriodSeconds ?? 30;
  if (grace * 1000 < pause * 1000 + shutdownMs + 1000)
    problems.push(
      `${service}: terminationGracePeriodSeconds ${grace} does not cover preStop ${pause}s + SHUTDOWN_TIMEOUT_MS ${shutdownMs}`,
    );

  // Prometheus scrapes the ops port.
  const annotations =
    (d.spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations ??
    {};
  if (
    annotations['prometheus.io/scrape'] !== 'true' ||
    annotations['prometheus.io/port'] !== String(opsPort?.containerPort) ||
    annotations['prometheus.io/path'] !== '/metrics'
  ) {
    problems.push(`${service}: prometheus.io annotations must point at /metrics on the ops port`);
  }

  // A Service and a PodDisruptionBudget that select these pods.
  const labels = podLabels(d);
  const svc = find(ms, 'Service', service) as
    (Manifest & { spec: { selector: Record<string, string>; ports: { targetPort?: string | number }[] } }) | undefined;
  if (!svc || !selects(svc.spec.selector, labels)) problems.push(`${service}: no Service selecting its pods`);
  else if (!svc.spec.ports.some((p) => p.targetPort === 'ops' || p.targetPort === opsPort?.containerPort))
    problems.push(`${service}: the Service does not expose the ops port`);
  const pdb = find(ms, 'PodDisruptionBudget', service) as
    (Manifest & { spec: { selector: { matchLabels: Record<string, string> } } }) | undefined;
  if (!pdb || !selects(pdb.spec.selector.matchLabels, labels))
    problems.push(`${service}: no PodDisruptionBudget selecting its pods`);
  return problems;
}

function hpaOf(ms: Manifest[], service: string) {
  return ms.find(
    (m) =>
      m.kind === 'HorizontalPodAutoscaler' &&
      isDeepStrictEqual((m.spec as { scaleTargetRef: unknown }).scaleTargetRef, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: service,
      }),
  ) as (Manifest & { spec: { minReplicas: number; maxReplicas: number; metrics: unknown[] } }) | undefined;
}

interface ScaledObjectSpec {
  scaleTargetRef: { apiVersion?: string; kind?: string; name: string };
  minReplicaCount?: number;
  maxReplicaCount?: number;
  triggers: { type: string; metricType?: string; metadata: Record<string, string> }[];
}
const scaledObjectsOf = (ms: Manifest[], service: string) =>
  ms.filter(
    (m) =>
      m.kind === 'ScaledObject' &&
      (m.spec as ScaledObjectSpec).scaleTargetRef.name === service &&
      ((m.spec as ScaledObjectSpec).scaleTargetRef.kind ?? 'Deployment') === 'Deployment',
  ) as (Manifest & { spec: ScaledObjectSpec })[];

/**
 * The autoscaler of a Deployment: its HorizontalPodAutoscaler, or its KEDA ScaledObject (which
 * makes an HPA of its own); min and max replicas, and its CPU utilization target if it has one.
 */
function autoscalerOf(ms: Manifest[], service: string) {
  const hpa = hpaOf(ms, service);
  if (hpa) {
    const cpu = (
      hpa.spec.metrics as { type: string; resource?: { name: string; target: { averageUtilization?: number } } }[]
    ).find((m) => m.type === 'Resource' && m.resource?.name === 'cpu')?.resource?.target.averageUtilization;
    return { kind: 'HorizontalPodAutoscaler', min: hpa.spec.minReplicas, max: hpa.spec.maxReplicas, cpu };
  }
  const [so] = scaledObjectsOf(ms, service);
  if (!so) return undefined;
  const cpu = so.spec.triggers.find((t) => t.type === 'cpu' && t.metricType === 'Utilization')?.metadata.value;
  return {
    kind: 'ScaledObject',
    min: so.spec.minReplicaCount ?? 0,
    max: so.spec.maxReplicaCount ?? 100,
    cpu: cpu === undefined ? undefined : Number(cpu),
  };
}

/** Deployments more than one autoscaler targets (an HPA and a ScaledObject would fight over the count). */
function doublyScaled(ms: Manifest[]): string[] {
  return ms
    .filter((m) => m.kind === 'Deployment')
    .map((d) => d.metadata.name)
    .filter((name) => (hpaOf(ms, name) ? 1 : 0) + scaledObjectsOf(ms, name).length > 1);
}

/** Pods a service runs with at least: its replicas, or its autoscaler's minimum. */
function minimumPods(ms: Manifest[], service: string): number {
  const scaler = autoscalerOf(ms, service);
  if (scaler) return scaler.min;
  return (find(ms, 'Deployment', service)?.spec as { replicas?: number }).replicas ?? 1;
}

const base = kustomize(baseDir);
const production = kustomize(productionDir);
const secretTemplate = find(base, 'Secret', 'loyalty-secrets') as
  (Manifest & { stringData: Record<string, string> }) | undefined;
const secretKeys = Object.keys(secretTemplate?.stringData ?? {});

describe.each([
  ['base', base],
  ['production overlay', production],
])('%s', (_name, ms) => {
  it('renders objects that are valid against the Kubernetes API schemas', () => {
    expect(ms.length).toBeGreaterThan(10);
    expect(ms.flatMap(schemaProblems)).toEqual([]);
  });

  it('has no fields the Kubernetes API does not know', () => {
    expect(unknownFieldProblems(ms)).toEqual([]);
  });

  it('gives every service a compliant Deployment, a Service and a PodDisruptionBudget', () => {
    expect(serviceNames).toEqual(['claims', 'gateway', 'identity', 'ledger', 'referrals', 'webhooks']);
    expect(serviceNames.flatMap((s) => deploymentProblems(s, ms, secretKeys))).toEqual([]);
    expect(
      ms
        .filter((m) => m.kind === 'Deployment' && !addOns.includes(m.metadata.name))
        .map((m) => m.metadata.name)
        .sort(),
    ).toEqual(serviceNames);
  });

  it('autoscales gateway and ledger on CPU (an HPA, or a ScaledObject in production), and the autoscaler alone sets their replicas', () => {
    for (const service of autoscaled) {
      const scaler = autoscalerOf(ms, service);
      expect(scaler, `autoscaler for ${service}`).toBeDefined();
      const hpa = hpaOf(ms, service);
      if (hpa) expect(hpa.apiVersion).toBe('autoscaling/v2');
      expect(scaler!.min).toBeGreaterThanOrEqual(2);
      expect(scaler!.max).toBeGreaterThan(scaler!.min);
      expect(scaler!.cpu, service).toBeGreaterThan(0);
      expect(scaler!.cpu, service).toBeLessThanOrEqual(80);
    }
    // A replicas field would reset the autoscaler's count on every apply.
    for (const service of serviceNames)
      if (autoscalerOf(ms, service))
        expect((find(ms, 'Deployment', service)!.spec as { replicas?: number }).replicas, service).toBeUndefined();
    for (const service of serviceNames) expect(minimumPods(ms, service), service).toBeGreaterThanOrEqual(2);
    // KEDA makes an HPA for each ScaledObject: never a second autoscaler on one Deployment.
    expect(doublyScaled(ms)).toEqual([]);
  });

  it('uses policy/v1 disruption budgets that never block a drain of a healthy service', () => {
    const pdbs = ms.filter((m) => m.kind === 'PodDisruptionBudget');
    expect(
      pdbs
        .map((m) => m.metadata.name)
        .filter((n) => !addOns.includes(n))
        .sort(),
    ).toEqual(serviceNames);
    for (const pdb of pdbs) {
      expect(pdb.apiVersion).toBe('policy/v1');
      expect(pdb.spec).toMatchObject({ maxUnavailable: 1 });
    }
  });

  it('has a migration Job that runs scripts/dist/migrate.js once, as non-root, with what it needs', () => {
    const job = find(ms, 'Job', 'migrate');
    expect(job).toBeDefined();
    expect(job!.apiVersion).toBe('batch/v1');
    const pod = podSpecOf(job!) as PodSpec;
    const c = mainContainer(job!);
    expect(pod.restartPolicy).toBe('Never');
    expect(c.command).toEqual(['node', 'scripts/dist/migrate.js']);
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(quantity(c.resources?.limits?.memory)).toBeGreaterThan(0);
    // It runs before anything else is applied: literal values and the Secret only.
    expect(c.envFrom).toBeUndefined();
    expect(c.env?.filter((e) => e.valueFrom?.configMapKeyRef)).toEqual([]);
    const { env, problems } = environmentOf(c, ms);
    expect(problems).toEqual([]);
    expect(Object.keys(env).filter((name) => !migrateVariables.includes(name))).toEqual([]);
    // Straight to PostgreSQL: in production DATABASE_URL is PgBouncer's, the Job needs a session.
    expect(c.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({
      name: 'loyalty-secrets',
      key: find(ms, 'Deployment', 'pgbouncer') ? 'DIRECT_DATABASE_URL' : 'DATABASE_URL',
    });
    // The Deployments leave migrations to the Job.
    expect(
      (find(ms, 'ConfigMap', 'loyalty-database') as Manifest & { data: Record<string, string> }).data.MIGRATE_ON_START,
    ).toBe('false');
  });
});

describe('base', () => {
  it('ships the Secret as a clearly marked template the services refuse to start with', () => {
    expect(secretTemplate).toBeDefined();
    expect(secretKeys.sort()).toEqual([
      'AUDIT_KEY',
      'DATABASE_URL',
      'DIRECT_DATABASE_URL',
      'OPERATOR_TOKEN',
      'OTP_SECRET',
      'REDIS_URL',
      'SANDBOX_SMTP_URL',
      'SECRETS_KEY',
      'SECRETS_KEY_PREVIOUS',
      'SMTP_URL',
    ]);
    for (const key of [
      'AUDIT_KEY',
      'DATABASE_URL',
      'OPERATOR_TOKEN',
      'OTP_SECRET',
      'REDIS_URL',
      'SECRETS_KEY',
      'SMTP_URL',
    ])
      expect(secretTemplate!.stringData[key], key).toContain('REPLACE_ME');
    expect(configProblems('identity', { OTP_SECRET: secretTemplate!.stringData.OTP_SECRET! })).not.toEqual([]);
    expect(configProblems('webhooks', { SECRETS_KEY: secretTemplate!.stringData.SECRETS_KEY! })).not.toEqual([]);
    expect(configProblems('identity', { AUDIT_KEY: secretTemplate!.stringData.AUDIT_KEY! }).join('\n')).toMatch(
      /AUDIT_KEY: must be at least 32 characters/,
    );
    expect(configProblems('gateway', { OPERATOR_TOKEN: secretTemplate!.stringData.OPERATOR_TOKEN! })).not.toEqual([]);
  });

  it('uses the local image names that deploy/compose.yaml builds', () => {
    for (const m of base)
      for (const c of containersOf(m))
        expect(c.image).toMatch(/^loyalty\/(gateway|identity|ledger|claims|referrals|webhooks|migrate):dev$/);
  });
});

describe('production overlay', () => {
  it('puts everything in its own namespace under the restricted Pod Security Standard', () => {
    const ns = find(production, 'Namespace', 'loyalty') as Manifest | undefined;
    expect(ns?.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    for (const m of production) if (m.kind !== 'Namespace') expect(m.metadata.namespace, idOf(m)).toBe('loyalty');
  });

  it('never applies the placeholder Secret', () => {
    expect(production.filter((m) => m.kind === 'Secret')).toEqual([]);
    expect(JSON.stringify(production)).not.toContain('REPLACE_ME');
  });

  it('pins released images from a registry', () => {
    const images = production
      .filter((m) => !addOns.includes(m.metadata.name))
      .flatMap((m) => containersOf(m).map((c) => c.image));
    expect(images.length).toBe(serviceNames.length + 1);
    for (const image of images) expect(image).toMatch(/^[a-z0-9.-]+\.[a-z]+\/loyalty\/[a-z]+:\d+\.\d+\.\d+$/);
    expect(containersOf(find(production, 'Deployment', 'pgbouncer')!)[0]!.image).toMatch(
      /^[a-z0-9.-]+\.[a-z]+\/[a-z0-9/-]+\/pgbouncer:\d+\.\d+\.\d+$/,
    );
  });

  it('runs more pods with higher limits than the base', () => {
    for (const service of serviceNames) {
      expect(minimumPods(production, service), service).toBeGreaterThan(minimumPods(base, service));
      const [p, b] = [
        mainContainer(find(production, 'Deployment', service)!),
        mainContainer(find(base, 'Deployment', service)!),
      ];
      for (const r of ['cpu', 'memory'])
        expect(quantity(p.resources?.limits?.[r]), `${service} ${r}`).toBeGreaterThan(
          quantity(b.resources?.limits?.[r]),
        );
    }
    for (const service of autoscaled)
      expect(autoscalerOf(production, service)!.max).toBeGreaterThan(autoscalerOf(base, service)!.max);
  });

  it('scales the event consumers (identity, referrals, webhooks) on the lag of their real JetStream consumers', () => {
    const common = find(production, 'ConfigMap', 'loyalty-common') as Manifest & { data: Record<string, string> };
    const subjects = new Subjects(common.data.SUBJECT_ROOT!);
    for (const service of ['identity', 'referrals', 'webhooks']) {
      const [so, ...more] = scaledObjectsOf(production, service);
      expect(so, service).toBeDefined();
      expect(more).toEqual([]);
      expect(so!.spec.minReplicaCount, service).toBeGreaterThanOrEqual(2);
      const source = readSources(path.join(root, 'services', service, 'src'));
      const lag = so!.spec.triggers.filter((t) => t.type === 'nats-jetstream');
      expect(lag.length, service).toBeGreaterThan(0);
      for (const t of lag) {
        expect(t.metadata.stream).toBe(subjects.streamName());
        expect(t.metadata.account).toBe('$G');
        expect(Number(t.metadata.lagThreshold)).toBeGreaterThan(0);
        expect(t.metadata.natsServerMonitoringEndpoint).toMatch(/^nats\.nats\.svc:8222$/);
        // The durable is `<root>-<name>`, a name the service's code declares.
        const prefix = `${subjects.root}-`;
        expect(t.metadata.consumer!.startsWith(prefix), t.metadata.consumer).toBe(true);
        expect(source, `${service} declares no consumer ${t.metadata.consumer}`).toContain(
          `'${t.metadata.consumer!.slice(prefix.length)}'`,
        );
      }
    }
  });

  it('scales gateway and ledger on CPU and on their request rate from Prometheus', () => {
    for (const service of autoscaled) {
      const [so] = scaledObjectsOf(production, service);
      const rate = so!.spec.triggers.find((t) => t.type === 'prometheus');
      expect(rate?.metadata.query, service).toMatch(
        new RegExp(`^sum\\(rate\\(loyalty_[a-z_]+_count\\{service="${service}"`),
      );
      expect(Number(rate?.metadata.threshold)).toBeGreaterThan(100);
      expect(rate?.metadata.serverAddress).toMatch(/^http:\/\/[a-z0-9.-]+:9090$/);
    }
  });

  it("has a ServiceMonitor for each service that scrapes its Service on the port ops, keeping the metrics' own labels", () => {
    for (const service of serviceNames) {
      const svc = find(production, 'Service', service) as Manifest & {
        spec: { ports: { name?: string }[] };
      };
      const monitors = production.filter(
        (m) =>
          m.kind === 'ServiceMonitor' &&
          selects(
            (m.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
            svc.metadata.labels ?? {},
          ),
      ) as (Manifest & { spec: { endpoints: { port: string; path: string; honorLabels?: boolean }[] } })[];
      expect(
        monitors.map((m) => m.metadata.name),
        service,
      ).toEqual([service]);
      expect(monitors[0]!.spec.endpoints).toEqual([
        expect.objectContaining({ port: 'ops', path: '/metrics', honorLabels: true }),
      ]);
      expect(svc.spec.ports.map((p) => p.name)).toContain('ops');
    }
    expect(production.filter((m) => m.kind === 'PrometheusRule').map((m) => m.metadata.name)).toEqual(['loyalty']);
  });
});

describe('the validators reject what is broken', () => {
  const deployment = () =>
    structuredClone(find(production, 'Deployment', 'ledger')!) as Manifest & { spec: Record<string, never> };
  const container = (d: Manifest) => mainContainer(d) as Record<string, unknown> & Container;

  it('accepts the unmodified object (control)', () => {
    expect(schemaProblems(deployment())).toEqual([]);
    expect(deploymentProblems('ledger', production, secretKeys)).toEqual([]);
  });

  it.each<[string, (d: Manifest & { spec: Record<string, unknown> }) => void]>([
    ['replicas as text', (d) => void (d.spec.replicas = 'three')],
    ['an invalid CPU quantity', (d) => void (container(d).resources!.limits!.cpu = 'lots')],
    ['a pod without containers', (d) => void delete (podSpecOf(d) as Record<string, unknown>).containers],
    [
      'a probe port that is an object',
      (d) => void (container(d).readinessProbe!.httpGet!.port = { name: 'ops' } as never),
    ],
    ['a name with capitals and underscores', (d) => void (d.metadata.name = 'Ledger_Service')],
  ])('schema validation rejects %s', (_what, breakIt) => {
    const d = deployment();
    breakIt(d);
    expect(schemaProblems(d)).not.toEqual([]);
  });

  it('rejects an unknown kind instead of skipping it', () => {
    expect(schemaProblems({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).not.toEqual([]);
  });

  it('rejects a ScaledObject or a ServiceMonitor that breaks its CRD schema, and a misspelt field of one', () => {
    const so = structuredClone(find(production, 'ScaledObject', 'webhooks')!) as Manifest & {
      spec: Record<string, unknown>;
    };
    expect(schemaProblems(so)).toEqual([]);
    so.spec.maxReplicaCount = 'ten';
    expect(schemaProblems(so)).not.toEqual([]);
    const sm = structuredClone(find(production, 'ServiceMonitor', 'ledger')!) as Manifest & {
      spec: { endpoints: Record<string, unknown>[] };
    };
    expect(schemaProblems(sm)).toEqual([]);
    sm.spec.endpoints[0]!.honorLabels = 'yes';
    expect(schemaProblems(sm)).not.toEqual([]);
    const typo = structuredClone(find(production, 'ScaledObject', 'ledger')!) as Manifest & {
      spec: Record<string, unknown>;
    };
    typo.spec.maxReplicas = 12;
    expect(unknownFieldProblems([typo]).join('\n')).toMatch(/maxReplicas/);
  });

  it('finds an HPA and a ScaledObject on the same Deployment', () => {
    expect(doublyScaled(production)).toEqual([]);
    const both = [...production, structuredClone(hpaOf(base, 'gateway')!)];
    expect(doublyScaled(both)).toEqual(['gateway']);
  });

  it('finds a misspelt field', () => {
    const d = deployment();
    const c = container(d);
    c.readinesProbe = c.readinessProbe;
    delete c.readinessProbe;
    expect(unknownFieldProblems([d]).join('\n')).toMatch(/readinesProbe/);
  });

  it.each<[string, (c: Container) => void, RegExp]>([
    ['a missing readiness probe', (c) => delete c.readinessProbe, /readiness probe/],
    ['a liveness probe on the HTTP port', (c) => void (c.livenessProbe!.httpGet!.port = 8080), /liveness probe/],
    ['no memory limit', (c) => delete c.resources!.limits!.memory, /memory request and limit/],
    ['running as root', (c) => void (c.securityContext = { ...c.securityContext, runAsUser: 0 }), /runs as root/],
    [
      'a writable root filesystem',
      (c) => void (c.securityContext!.readOnlyRootFilesystem = false),
      /readOnlyRootFilesystem/,
    ],
    [
      'a variable the service does not read',
      (c) => void c.env!.push({ name: 'DATABSE_URL', value: 'x' }),
      /DATABSE_URL, which it does not read/,
    ],
    [
      'a value the service refuses',
      (c) => void c.env!.push({ name: 'DATABASE_POOL_SIZE', value: 'many' }),
      /DATABASE_POOL_SIZE/,
    ],
    [
      'a preStop pause the grace period does not cover',
      (c) => void (c.lifecycle = { preStop: { exec: { command: ['sleep', '15'] } } }),
      /terminationGracePeriodSeconds/,
    ],
  ])('the policy rejects %s', (_what, breakIt, message) => {
    const ms = structuredClone(production);
    breakIt(mainContainer(find(ms, 'Deployment', 'ledger')!));
    expect(deploymentProblems('ledger', ms, secretKeys).join('\n')).toMatch(message);
  });

  it('the policy rejects a service without a PodDisruptionBudget', () => {
    const ms = production.filter((m) => !(m.kind === 'PodDisruptionBudget' && m.metadata.name === 'claims'));
    expect(deploymentProblems('claims', ms, secretKeys)).toContain('claims: no PodDisruptionBudget selecting its pods');
  });
});

describe('the test renderer', () => {
  const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

  it.skipIf(!kubectl).each([
    ['base', baseDir],
    ['production overlay', productionDir],
  ])('renders the %s exactly as kubectl kustomize does', (_name, dir) => {
    const out = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    expect(out.status, out.stderr).toBe(0);
    const byId = (ms: Manifest[]) => Object.fromEntries(ms.map((m) => [idOf(m), m]));
    expect(byId(kustomize(dir))).toEqual(byId(parseManifests(out.stdout)));
  });

  it('fails loudly on what it cannot render', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kustomize-'));
    try {
      writeFileSync(
        path.join(dir, 'cm.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  A: "1"\n',
      );
      const render = (kustomization: string) => {
        writeFileSync(path.join(dir, 'kustomization.yaml'), `resources: [cm.yaml]\n${kustomization}`);
        return kustomize(dir);
      };
      expect(render('namespace: x\n')[0]!.metadata.namespace).toBe('x');
      expect(() => render('configMapGenerator: []\n')).toThrow(/does not support configMapGenerator/);
      expect(() =>
        render('patches:\n  - target: {kind: ConfigMap, name: other}\n    patch: "[{op: remove, path: /data}]"\n'),
      ).toThrow(/matches nothing/);
      expect(() =>
        render('patches:\n  - target: {kind: ConfigMap}\n    patch: "[{op: replace, path: /data/B, value: x}]"\n'),
      ).toThrow(/nothing there/);
      expect(() => render('replicas: [{name: settings, count: 2}]\n')).toThrow(/not here/);
      expect(() => parseManifests('kind: Deployment\n')).toThrow(/apiVersion, kind and metadata.name/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ── Network policies ────────────────────────────────────────────────────────────────────────
interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface PolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string };
}
interface PolicyRule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: { port?: number | string; protocol?: string }[];
}
type Policy = Manifest & {
  spec: { podSelector: LabelSelector; policyTypes: string[]; ingress?: PolicyRule[]; egress?: PolicyRule[] };
};

function selectorMatches(selector: LabelSelector, labels: Record<string, string>): boolean {
  if (!Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v)) return false;
  return (selector.matchExpressions ?? []).every((e) => {
    if (e.operator === 'In') return e.values!.includes(labels[e.key]!);
    if (e.operator === 'NotIn') return !e.values!.includes(labels[e.key]!);
    if (e.operator === 'Exists') return e.key in labels;
    if (e.operator === 'DoesNotExist') return !(e.key in labels);
    throw new Error(`unknown operator ${e.operator}`);
  });
}

/** Every workload with a pod template: its name, pod labels and named container ports. */
function workloads(ms: Manifest[]) {
  return ms
    .filter((m) => podSpecOf(m))
    .map((m) => {
      const template = (m.spec as { template: { metadata: { labels: Record<string, string> } } }).template;
      const ports = Object.fromEntries(
        containersOf(m).flatMap((c) =>
          ((c as Container).ports ?? []).map((p) => [p.name ?? String(p.containerPort), p.containerPort]),
        ),
      );
      return { name: m.metadata.name, labels: template.metadata.labels, ports };
    });
}

/** The rules that apply to a workload in one direction (NetworkPolicies are additive). */
function rulesFor(ms: Manifest[], labels: Record<string, string>, direction: 'Ingress' | 'Egress') {
  const policies = ms.filter((m) => m.kind === 'NetworkPolicy') as Policy[];
  const selecting = policies.filter(
    (p) => p.spec.policyTypes.includes(direction) && selectorMatches(p.spec.podSelector, labels),
  );
  return {
    isolated: selecting.length > 0,
    rules: selecting.flatMap((p) =>
      ((direction === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? []).map((rule) => ({
        policy: p.metadata.name,
        rule,
      })),
    ),
  };
}

/** Numeric ports a rule opens (named ports resolved against the workload's container ports). */
const portsOf = (rule: PolicyRule, named: Record<string, number>) =>
  (rule.ports ?? []).map((p) => (typeof p.port === 'string' ? named[p.port] : p.port));

const egressAllowed: Record<string, number[]> = {
  gateway: [53, 4222, 6379],
  identity: [53, 4222, 5432, 25, 465, 587, 1025],
  ledger: [53, 4222, 5432],
  claims: [53, 4222, 5432],
  referrals: [53, 4222, 5432],
  webhooks: [53, 4222, 5432, 80, 443],
  migrate: [53, 5432],
  pgbouncer: [53, 5432],
  // Every workload of the production overlay may send spans to the collector; it sends them on.
  'otel-collector': [53, 4317],
};
const egressRequired: Record<string, number[]> = {
  gateway: [53, 4222, 6379],
  identity: [4222, 5432, 587],
  ledger: [4222, 5432],
  claims: [4222, 5432],
  referrals: [4222, 5432],
  webhooks: [4222, 5432, 80, 443],
  migrate: [5432],
  pgbouncer: [5432],
  'otel-collector': [4317],
};
/** Infrastructure the production overlay adds beside the services (not built from this repository). */
const addOns = ['pgbouncer', 'otel-collector'];

function networkProblems(ms: Manifest[]): string[] {
  const problems: string[] = [];
  for (const w of workloads(ms)) {
    const ingress = rulesFor(ms, w.labels, 'Ingress');
    const egress = rulesFor(ms, w.labels, 'Egress');
    if (!ingress.isolated || !egress.isolated) problems.push(`${w.name}: not isolated in both directions`);
    for (const { policy, rule } of ingress.rules) {
      const ports = portsOf(rule, w.ports);
      if (ports.length === 0 || ports.some((p) => p === undefined))
        problems.push(`${w.name}: ingress rule of ${policy} opens all ports or a port it does not have`);
      const open = !rule.from || rule.from.some((peer) => peer.ipBlock?.cidr === '0.0.0.0/0');
      // Only the gateway takes traffic from anywhere, and only on its HTTP port.
      if (open && (w.name !== 'gateway' || !ports.every((p) => p === w.ports.http)))
        problems.push(`${w.name}: ${policy} admits any source on ${ports.join(',')}`);
      if (!open && !addOns.includes(w.name) && !ports.every((p) => p === w.ports.ops))
        problems.push(`${w.name}: ${policy} admits ${ports.join(',')} (only the ops port, from monitoring)`);
    }
    const opened = new Set<number>();
    for (const { policy, rule } of egress.rules) {
      const ports = portsOf(rule, w.ports);
      if (ports.length === 0) problems.push(`${w.name}: egress rule of ${policy} opens every port`);
      for (const p of ports) opened.add(p!);
    }
    const allowed = egressAllowed[w.name];
    if (!allowed) problems.push(`${w.name}: no egress expectations in the test`);
    const spans = find(ms, 'Deployment', 'otel-collector') && serviceNames.includes(w.name) ? [4318] : [];
    for (const p of opened)
      if (allowed && !allowed.includes(p) && !spans.includes(p)) problems.push(`${w.name}: may connect to port ${p}`);
    for (const p of egressRequired[w.name] ?? [])
      if (!opened.has(p)) problems.push(`${w.name}: cannot reach port ${p} it needs`);
  }
  return problems;
}

describe.each([
  ['base', base],
  ['production overlay', production],
])('network policies of the %s', (_name, ms) => {
  it('isolate every pod; only the gateway takes ingress; services reach only NATS, PostgreSQL, Redis, SMTP, DNS, and webhooks the web', () => {
    expect(workloads(ms).length).toBeGreaterThanOrEqual(serviceNames.length + 1);
    expect(networkProblems(ms)).toEqual([]);
  });

  it('let only webhooks out to the internet, on 80 and 443, and never to private or link-local ranges', () => {
    for (const w of workloads(ms)) {
      const web = rulesFor(ms, w.labels, 'Egress').rules.filter((r) =>
        portsOf(r.rule, w.ports).some((p) => p === 80 || p === 443),
      );
      if (w.name !== 'webhooks') {
        expect(web, w.name).toEqual([]);
        continue;
      }
      expect(web).toHaveLength(1);
      const { rule } = web[0]!;
      expect(portsOf(rule, w.ports).sort()).toEqual([443, 80]);
      const blocks = (rule.to ?? []).map((peer) => peer.ipBlock as { cidr: string; except?: string[] });
      expect(blocks.map((b) => b.cidr)).toEqual(['0.0.0.0/0', '::/0']);
      for (const range of [
        '10.0.0.0/8',
        '172.16.0.0/12',
        '192.168.0.0/16',
        '169.254.0.0/16',
        '127.0.0.0/8',
        '100.64.0.0/10',
      ])
        expect(blocks[0]!.except).toContain(range);
      for (const range of ['fc00::/7', 'fe80::/10', '::1/128', '::ffff:0:0/96', '::/96'])
        expect(blocks[1]!.except).toContain(range);
    }
  });

  it('reach NATS only in its namespace, on 4222', () => {
    for (const w of workloads(ms)) {
      for (const { rule } of rulesFor(ms, w.labels, 'Egress').rules.filter((r) =>
        portsOf(r.rule, w.ports).includes(4222),
      )) {
        expect(rule.to, w.name).toEqual([
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'nats' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'nats' } },
          },
        ]);
      }
    }
  });
});

describe('the network policy check rejects what is broken', () => {
  it.each<[string, (ms: Manifest[]) => void, RegExp]>([
    [
      'a ledger open to any source',
      (ms) =>
        void ms.push({
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'oops' },
          spec: {
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ledger' } },
            policyTypes: ['Ingress'],
            ingress: [{ ports: [{ port: 9102 }] }],
          },
        }),
      /ledger: oops admits any source/,
    ],
    [
      'no default deny',
      (ms) =>
        void ms.splice(
          ms.findIndex((m) => m.metadata.name === 'default-deny'),
          1,
        ),
      /migrate: not isolated/,
    ],
    [
      'the ledger reaching Redis',
      (ms) => {
        const p = find(ms, 'NetworkPolicy', 'gateway-to-redis') as Policy;
        p.spec.podSelector = {
          matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: ['gateway', 'ledger'] }],
        };
      },
      /ledger: may connect to port 6379/,
    ],
  ])('%s', (_what, breakIt, message) => {
    const ms = structuredClone(production);
    breakIt(ms);
    expect(networkProblems(ms).join('\n')).toMatch(message);
  });
});

// ── NATS credentials and TLS ────────────────────────────────────────────────────────────────
describe('NATS credentials', () => {
  it('each service logs in with its own user from its own Secret (templates in the base, out of band in production)', () => {
    for (const ms of [base, production]) {
      for (const service of serviceNames) {
        const c = mainContainer(find(ms, 'Deployment', service)!);
        for (const key of ['NATS_USER', 'NATS_PASSWORD'])
          expect(c.env?.find((e) => e.name === key)?.valueFrom?.secretKeyRef, `${service} ${key}`).toEqual({
            name: `nats-${service}`,
            key,
          });
      }
    }
    for (const service of serviceNames) {
      const secret = find(base, 'Secret', `nats-${service}`) as Manifest & { stringData: Record<string, string> };
      expect(secret.stringData).toEqual({ NATS_USER: service, NATS_PASSWORD: 'REPLACE_ME' });
      expect(find(production, 'Secret', `nats-${service}`)).toBeUndefined();
    }
  });

  it('production: every service trusts the NATS CA from the Secret nats-tls-ca (the server requires TLS)', () => {
    const common = find(production, 'ConfigMap', 'loyalty-common') as Manifest & { data: Record<string, string> };
    expect(common.data.NATS_URL).toBe('nats://nats.nats.svc:4222');
    for (const service of serviceNames) {
      const d = find(production, 'Deployment', service)!;
      const c = mainContainer(d) as Container & { volumeMounts: { name: string; mountPath: string }[] };
      const file = c.env?.find((e) => e.name === 'NODE_EXTRA_CA_CERTS')?.value;
      expect(file, service).toBe('/etc/nats-tls/ca.crt');
      const mount = c.volumeMounts.find((m) => file!.startsWith(`${m.mountPath}/`))!;
      const volume = (
        podSpecOf(d)!.volumes as { name: string; secret?: { secretName: string; items: unknown[] } }[]
      ).find((v) => v.name === mount.name);
      expect(volume?.secret).toEqual({ secretName: 'nats-tls-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] });
    }
  });
});

// ── Database connection budget ─────────────────────────────────────────────────────────────
// PostgreSQL's defaults: max_connections 100, of which superuser_reserved_connections 3; keep 10
// for operators, monitoring and replication. The migration Job holds one direct connection.
const POSTGRES_MAX_CONNECTIONS = 100;
const POSTGRES_RESERVED = 3 + 10;
const MIGRATION_CONNECTIONS = 1;

function ini(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .map((l) => /^\s*([a-z_]+)\s*=\s*(.*?)\s*$/.exec(l))
      .filter((m) => m !== null)
      .map((m) => [m[1]!, m[2]!]),
  );
}

/** Pods a Deployment can run at once: its replicas or autoscaler maximum, plus the rollout surge. */
function maximumPods(ms: Manifest[], name: string): number {
  const d = find(ms, 'Deployment', name)!;
  const spec = d.spec as { replicas?: number; strategy?: { rollingUpdate?: { maxSurge?: number | string } } };
  const steady = autoscalerOf(ms, name)?.max ?? spec.replicas ?? 1;
  const surge = spec.strategy?.rollingUpdate?.maxSurge ?? '25%';
  return steady + (typeof surge === 'number' ? surge : Math.ceil((steady * parseInt(surge, 10)) / 100));
}

/** The connection budget of a rendered overlay: the numbers and what does not fit. */
function connectionBudget(ms: Manifest[]) {
  const database = find(ms, 'ConfigMap', 'loyalty-database') as Manifest & { data: Record<string, string> };
  const poolSize = Number(database.data.DATABASE_POOL_SIZE);
  const databaseServices = serviceNames.filter((s) => s !== 'gateway');
  const clients = databaseServices.reduce((sum, s) => sum + maximumPods(ms, s) * poolSize, 0);
  const problems: string[] = [];
  const pooler = find(ms, 'Deployment', 'pgbouncer');
  let server: number;
  if (!pooler) {
    server = clients + MIGRATION_CONNECTIONS;
  } else {
    const config = ini(
      (find(ms, 'ConfigMap', 'pgbouncer') as Manifest & { data: Record<string, string> }).data['pgbouncer.ini']!,
    );
    if (autoscalerOf(ms, 'pgbouncer'))
      problems.push('PgBouncer must not autoscale: its pod count is part of the budget');
    const poolers = maximumPods(ms, 'pgbouncer');
    server = poolers * Number(config.max_db_connections) + MIGRATION_CONNECTIONS;
    if (!(Number(config.max_db_connections) > 0)) problems.push('PgBouncer needs max_db_connections');
    if (config.pool_mode !== 'transaction') problems.push('PgBouncer should pool transactions');
    if (!(Number(config.max_prepared_statements) > 0))
      problems.push('the services use named prepared statements: PgBouncer needs max_prepared_statements');
    // All clients may land on one PgBouncer pod.
    if (clients > Number(config.max_client_conn))
      problems.push(`${clients} client connections exceed max_client_conn ${config.max_client_conn} of one PgBouncer`);
  }
  if (server + POSTGRES_RESERVED > POSTGRES_MAX_CONNECTIONS)
    problems.push(
      `${server} server connections + ${POSTGRES_RESERVED} reserved exceed PostgreSQL's max_connections ${POSTGRES_MAX_CONNECTIONS}`,
    );
  const ledger = mainContainer(find(ms, 'Deployment', 'ledger')!);
  const postingStatements = Number(ledger.env?.find((e) => e.name === 'POSTING_STATEMENTS')?.value ?? 2);
  if (postingStatements >= poolSize) problems.push('the ledger posting statements take the whole pool');
  return { clients, server, problems };
}

describe('the database connection budget of the production overlay', () => {
  it('adds up: PgBouncer server connections within max_connections, every client pool within one PgBouncer', () => {
    const budget = connectionBudget(production);
    expect(budget.problems).toEqual([]);
    expect(budget.server + POSTGRES_RESERVED).toBeLessThanOrEqual(POSTGRES_MAX_CONNECTIONS);
    expect(budget.clients).toBeGreaterThan(budget.server); // the pooler is what makes it fit
  });

  it('sends every database connection of the services through PgBouncer', () => {
    for (const service of serviceNames.filter((s) => s !== 'gateway')) {
      const labels = podLabels(find(production, 'Deployment', service)!);
      const to5432 = rulesFor(production, labels, 'Egress').rules.filter((r) => portsOf(r.rule, {}).includes(5432));
      expect(to5432.length, service).toBeGreaterThan(0);
      for (const { rule } of to5432)
        expect(rule.to, service).toEqual([
          {
            podSelector: {
              matchLabels: { 'app.kubernetes.io/name': 'pgbouncer', 'app.kubernetes.io/part-of': 'loyalty' },
            },
          },
        ]);
    }
  });

  it('rejects the layout without a pooler (pool 20 × up to 25 pods straight to PostgreSQL)', () => {
    const direct = structuredClone(production).filter((m) => m.metadata.name !== 'pgbouncer');
    (
      find(direct, 'ConfigMap', 'loyalty-database') as Manifest & { data: Record<string, string> }
    ).data.DATABASE_POOL_SIZE = '20';
    const budget = connectionBudget(direct);
    expect(budget.clients).toBeGreaterThan(400);
    expect(budget.problems.join('\n')).toMatch(/exceed PostgreSQL's max_connections 100/);
  });

  it('rejects a PgBouncer sized past max_connections or too small for the clients', () => {
    const big = structuredClone(production);
    const cm = find(big, 'ConfigMap', 'pgbouncer') as Manifest & { data: Record<string, string> };
    cm.data['pgbouncer.ini'] = cm.data['pgbouncer.ini']!.replace(
      /max_db_connections = \d+/,
      'max_db_connections = 60',
    ).replace(/max_client_conn = \d+/, 'max_client_conn = 100');
    const problems = connectionBudget(big).problems.join('\n');
    expect(problems).toMatch(/exceed PostgreSQL's max_connections/);
    expect(problems).toMatch(/exceed max_client_conn 100/);
  });
});
