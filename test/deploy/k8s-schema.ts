// Offline validation of Kubernetes objects, two ways:
// - the JSON schemas of the Kubernetes API (kubernetes-models: types, required fields, formats
//   such as resource quantities), and
// - unknown fields, which those schemas let through but `kubectl apply` (strict field validation)
//   refuses: the objects are type-checked as object literals against the same package's
//   TypeScript interfaces, where excess-property checks catch a misspelt field.
import path from 'node:path';
import ts from 'typescript';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { idOf, type Manifest } from './kustomize.ts';

interface Kind {
  validate(data: Manifest): void;
  module: string;
  type: string;
}

const kinds: Record<string, Kind> = {
  'apps/v1/Deployment': {
    validate: (d) => new Deployment(d as never).validate(),
    module: 'kubernetes-models/apps/v1/Deployment',
    type: 'IDeployment',
  },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    validate: (d) => new HorizontalPodAutoscaler(d as never).validate(),
    module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
    type: 'IHorizontalPodAutoscaler',
  },
  'batch/v1/Job': {
    validate: (d) => new Job(d as never).validate(),
    module: 'kubernetes-models/batch/v1/Job',
    type: 'IJob',
  },
  'networking.k8s.io/v1/NetworkPolicy': {
    validate: (d) => new NetworkPolicy(d as never).validate(),
    module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
    type: 'INetworkPolicy',
  },
  'policy/v1/PodDisruptionBudget': {
    validate: (d) => new PodDisruptionBudget(d as never).validate(),
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    type: 'IPodDisruptionBudget',
  },
  'v1/ConfigMap': {
    validate: (d) => new ConfigMap(d as never).validate(),
    module: 'kubernetes-models/v1/ConfigMap',
    type: 'IConfigMap',
  },
  'v1/Namespace': {
    validate: (d) => new Namespace(d as never).validate(),
    module: 'kubernetes-models/v1/Namespace',
    type: 'INamespace',
  },
  'v1/Secret': {
    validate: (d) => new Secret(d as never).validate(),
    module: 'kubernetes-models/v1/Secret',
    type: 'ISecret',
  },
  // Custom resources of the production overlay: KEDA and the Prometheus Operator (their CRDs' schemas).
  'keda.sh/v1alpha1/ScaledObject': {
    validate: (d) => new ScaledObject(d as never).validate(),
    module: '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject',
    type: 'IScaledObject',
  },
  'monitoring.coreos.com/v1/ServiceMonitor': {
    validate: (d) => new ServiceMonitor(d as never).validate(),
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor',
    type: 'IServiceMonitor',
  },
  'monitoring.coreos.com/v1/PrometheusRule': {
    validate: (d) => new PrometheusRule(d as never).validate(),
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule',
    type: 'IPrometheusRule',
  },
  'v1/Service': {
    validate: (d) => new Service(d as never).validate(),
    module: 'kubernetes-models/v1/Service',
    type: 'IService',
  },
};

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Problems of one object against the Kubernetes API schema (empty when valid). */
export function schemaProblems(m: Manifest): string[] {
  const kind = kinds[`${m.apiVersion}/${m.kind}`];
  if (!kind) return [`${idOf(m)}: no schema known for ${m.apiVersion} ${m.kind} (add it to test/deploy/k8s-schema.ts)`];
  const problems: string[] = [];
  // The schemas leave names unchecked; the API server wants DNS-1123 labels for all of these kinds.
  if (!dns1123Label.test(m.metadata.name) || m.metadata.name.length > 63)
    problems.push(`${idOf(m)}: metadata.name is not a DNS-1123 label`);
  try {
    kind.validate(m);
  } catch (err) {
    problems.push(`${idOf(m)}: ${(err as Error).message}`);
  }
  return problems;
}

/** Fields the Kubernetes API does not know, found by the TypeScript compiler (empty when none). */
export function unknownFieldProblems(manifests: Manifest[]): string[] {
  const root = path.resolve(import.meta.dirname, '..', '..');
  const file = path.join(root, 'test', 'deploy', '__manifests__.ts');
  const imports = new Map<string, string>();
  const lines: string[] = [];
  manifests.forEach((m, i) => {
    const kind = kinds[`${m.apiVersion}/${m.kind}`];
    if (!kind) throw new Error(`no schema known for ${m.apiVersion} ${m.kind}`);
    imports.set(kind.type, kind.module);
    lines.push(`export const m${i}: ${kind.type} = ${JSON.stringify(m)};`);
  });
  const header = [...imports].map(([type, module]) => `import type { ${type} } from '${module}';`);
  const source = [...header, ...lines].join('\n');

  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    name === file ? ts.createSourceFile(name, source, version) : getSourceFile(name, version, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!d.file || d.start === undefined) return text;
    const line = d.file.getLineAndCharacterOfPosition(d.start).line - header.length;
    const m = manifests[line];
    return `${m ? idOf(m) : d.file.fileName}: ${text}`;
  });
}
