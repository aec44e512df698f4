// A small, strict kustomize for the tests: renders deploy/k8s/* offline with the features those
// kustomizations use (resources, namespace, images, replicas, JSON 6902 patches and
// `$patch: delete`). Anything else throws, so a new feature cannot slip past validation unrendered.
// When kubectl is installed, k8s.test.ts checks that this renders exactly what `kubectl kustomize`
// renders.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Target {
  group?: string;
  version?: string;
  kind?: string;
  name?: string;
}
interface Patch {
  path?: string;
  patch?: string;
  target?: Target;
}
interface Kustomization {
  apiVersion?: string;
  kind?: string;
  resources?: string[];
  namespace?: string;
  images?: { name: string; newName?: string; newTag?: string; digest?: string }[];
  replicas?: { name: string; count: number }[];
  patches?: Patch[];
}

const supported = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'images', 'replicas', 'patches']);
/** Kinds that live outside namespaces (of those this project could use). */
const clusterScoped = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'PriorityClass',
  'StorageClass',
  'CustomResourceDefinition',
]);
const scalable = new Set(['Deployment', 'StatefulSet', 'ReplicaSet']);

/** Parse a YAML file of one or more documents; a syntax error throws with the file name. */
export function readManifests(file: string): Manifest[] {
  return parseManifests(readFileSync(file, 'utf8'), file);
}

export function parseManifests(text: string, source = 'input'): Manifest[] {
  const docs = parseAllDocuments(text);
  const out: Manifest[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value)) throw new Error(`${source}: a document is not a mapping`);
    const m = value as Manifest;
    if (typeof m.apiVersion !== 'string' || typeof m.kind !== 'string' || typeof m.metadata?.name !== 'string') {
      throw new Error(`${source}: every object needs apiVersion, kind and metadata.name`);
    }
    out.push(m);
  }
  return out;
}

export const idOf = (m: Manifest): string =>
  `${m.apiVersion}/${m.kind}/${m.metadata.namespace ?? '~'}/${m.metadata.name}`;

/** Render the kustomization in `dir` (recursively through its resources). */
export function kustomize(dir: string): Manifest[] {
  const file = path.join(dir, 'kustomization.yaml');
  const k = parse(readFileSync(file, 'utf8')) as Kustomization;
  if (k.kind !== undefined && k.kind !== 'Kustomization') throw new Error(`${file}: kind must be Kustomization`);
  const unknown = Object.keys(k).filter((key) => !supported.has(key));
  if (unknown.length > 0) throw new Error(`${file}: the test renderer does not support ${unknown.join(', ')}`);

  let out: Manifest[] = [];
  for (const resource of k.resources ?? []) {
    const p = path.resolve(dir, resource);
    out.push(...(statSync(p).isDirectory() ? kustomize(p) : readManifests(p)));
  }
  const seen = new Set<string>();
  for (const m of out) {
    if (seen.has(idOf(m))) throw new Error(`${file}: ${idOf(m)} is defined twice`);
    seen.add(idOf(m));
  }
  for (const patch of k.patches ?? []) out = applyPatch(out, patch, dir);
  if (k.namespace) {
    for (const m of out) if (!clusterScoped.has(m.kind)) m.metadata.namespace = k.namespace;
  }
  for (const image of k.images ?? []) {
    for (const m of out) for (const c of containersOf(m)) c.image = retag(c.image, image);
  }
  for (const r of k.replicas ?? []) {
    const hits = out.filter((m) => scalable.has(m.kind) && m.metadata.name === r.name);
    if (hits.length === 0) throw new Error(`${file}: replicas names ${r.name}, which is not here`);
    for (const m of hits) (m.spec as JsonObject).replicas = r.count;
  }
  return out;
}

/** Containers (and init containers) of any object that has a pod template. */
export function containersOf(m: Manifest): { name: string; image: string; [field: string]: unknown }[] {
  const spec = podSpecOf(m);
  if (!spec) return [];
  return [...((spec.initContainers as never[]) ?? []), ...((spec.containers as never[]) ?? [])];
}

export function podSpecOf(m: Manifest): Record<string, unknown> | undefined {
  type Template = { spec?: Record<string, unknown> };
  const spec = m.spec as { template?: Template; jobTemplate?: { spec?: { template?: Template } } } | undefined;
  if (!spec) return undefined;
  if (m.kind === 'Pod') return spec as Record<string, unknown>;
  if (m.kind === 'CronJob') return spec.jobTemplate?.spec?.template?.spec;
  return spec.template?.spec;
}

function retag(image: string, rule: NonNullable<Kustomization['images']>[number]): string {
  const at = image.indexOf('@');
  const withoutDigest = at >= 0 ? image.slice(0, at) : image;
  const colon = withoutDigest.lastIndexOf(':');
  const hasTag = colon > withoutDigest.lastIndexOf('/');
  const name = hasTag ? withoutDigest.slice(0, colon) : withoutDigest;
  if (name !== rule.name) return image;
  const tag = hasTag ? withoutDigest.slice(colon + 1) : undefined;
  const digest = at >= 0 ? image.slice(at + 1) : undefined;
  const newName = rule.newName ?? name;
  if (rule.digest) return `${newName}@${rule.digest}`;
  if (rule.newTag) return `${newName}:${rule.newTag}`;
  return `${newName}${tag ? `:${tag}` : ''}${digest ? `@${digest}` : ''}`;
}

function matches(m: Manifest, t: Target): boolean {
  const [group, version] = m.apiVersion.includes('/') ? m.apiVersion.split('/') : ['', m.apiVersion];
  if (t.kind !== undefined && t.kind !== m.kind) return false;
  if (t.group !== undefined && t.group !== group) return false;
  if (t.version !== undefined && t.version !== version) return false;
  // As in kustomize, a target name is a regular expression over the whole name.
  if (t.name !== undefined && !new RegExp(`^(?:${t.name})$`).test(m.metadata.name)) return false;
  return true;
}

function applyPatch(resources: Manifest[], patch: Patch, dir: string): Manifest[] {
  const text = patch.path !== undefined ? readFileSync(path.resolve(dir, patch.path), 'utf8') : patch.patch;
  if (text === undefined) throw new Error('a patch needs path or patch');
  const body = parse(text) as unknown;
  if (Array.isArray(body)) {
    if (!patch.target) throw new Error('a JSON 6902 patch needs a target');
    const hits = resources.filter((m) => matches(m, patch.target!));
    if (hits.length === 0) throw new Error(`patch target ${JSON.stringify(patch.target)} matches nothing`);
    for (const m of hits) for (const op of body as JsonObject[]) applyOperation(m as unknown as JsonObject, op);
    return resources;
  }
  const smp = body as Manifest & { $patch?: string };
  // Strategic merge patches: only whole-object deletion is used here.
  if (
    smp.$patch !== 'delete' ||
    Object.keys(smp).some((key) => !['apiVersion', 'kind', 'metadata', '$patch'].includes(key))
  ) {
    throw new Error('the test renderer supports JSON 6902 patches and `$patch: delete` only');
  }
  const kept = resources.filter(
    (m) => !(m.apiVersion === smp.apiVersion && m.kind === smp.kind && m.metadata.name === smp.metadata.name),
  );
  if (kept.length === resources.length)
    throw new Error(`$patch: delete of ${smp.kind} ${smp.metadata.name} matches nothing`);
  return kept;
}

function applyOperation(doc: JsonObject, op: JsonObject): void {
  if (typeof op.path !== 'string' || !op.path.startsWith('/'))
    throw new Error(`bad JSON patch path ${String(op.path)}`);
  const keys = op.path
    .slice(1)
    .split('/')
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
  const last = keys.pop()!;
  let parent: Json = doc;
  for (const key of keys) {
    const next: Json | undefined = Array.isArray(parent) ? parent[Number(key)] : (parent as JsonObject)[key];
    if (next === undefined || next === null || typeof next !== 'object')
      throw new Error(`JSON patch path ${op.path} does not exist`);
    parent = next;
  }
  const value = structuredClone(op.value as Json);
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : Number(last);
    if (!Number.isInteger(index) || index < 0 || index > parent.length)
      throw new Error(`JSON patch index ${op.path} is out of range`);
    if (op.op === 'add') parent.splice(index, 0, value);
    else if (op.op === 'replace' && index < parent.length) parent[index] = value;
    else if (op.op === 'remove' && index < parent.length) parent.splice(index, 1);
    else throw new Error(`JSON patch ${String(op.op)} ${op.path} is not applicable`);
    return;
  }
  const obj = parent as JsonObject;
  if (op.op === 'add') obj[last] = value;
  else if ((op.op === 'replace' || op.op === 'remove') && !(last in obj))
    throw new Error(`JSON patch ${op.op} ${op.path}: nothing there`);
  else if (op.op === 'replace') obj[last] = value;
  else if (op.op === 'remove') delete obj[last];
  else throw new Error(`the test renderer does not support JSON patch op ${String(op.op)}`);
}
