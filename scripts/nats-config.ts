// The platform's nats-server configuration: one user per service and the gateway, each with
// its permissions, passwords stored as bcrypt hashes.
//
//   node --import tsx scripts/nats-config.ts --root loyalty --passwords secrets.json \
//     --store-dir /data/jetstream [--host 0.0.0.0] [--port 4222] [--tls-cert c.pem --tls-key k.pem] \
//     [--out nats-server.conf] [--generate]
//
// --passwords names a JSON file holding {"nats": {"gateway": "...", "identity": "...", ...}} (or
// the same object at the top level). With --generate, missing passwords are made (random) and
// written back to that file (mode 0600). Each service is then started with NATS_USER=<its name>
// and NATS_PASSWORD=<its password>. --admin adds an unrestricted "admin" user (password "admin"
// in the file), for operators' tools and the local test harness.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { natsServerConfig, natsUsers, type NatsUser } from '@loyalty/runtime';

const { values } = parseArgs({
  options: {
    root: { type: 'string', default: 'loyalty' },
    passwords: { type: 'string' },
    generate: { type: 'boolean', default: false },
    admin: { type: 'boolean', default: false },
    host: { type: 'string', default: '0.0.0.0' },
    port: { type: 'string', default: '4222' },
    'store-dir': { type: 'string', default: '/data/jetstream' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
    'pid-file': { type: 'string' },
    out: { type: 'string' },
  },
});

function fail(message: string): never {
  console.error(`nats-config: ${message}`);
  process.exit(1);
}

if (!values.passwords) fail('--passwords <file.json> is required');
if (Boolean(values['tls-cert']) !== Boolean(values['tls-key'])) fail('--tls-cert and --tls-key go together');

const file = values.passwords;
const stored: Record<string, unknown> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
const nested = typeof stored.nats === 'object' && stored.nats !== null;
const source = (nested ? stored.nats : stored) as Record<string, unknown>;
const wanted: string[] = [...natsUsers, ...(values.admin ? ['admin'] : [])];
const passwords: Record<string, string> = {};
let changed = false;
for (const user of wanted) {
  const known = source[user];
  if (typeof known === 'string' && known.length >= 16) {
    passwords[user] = known;
    continue;
  }
  if (!values.generate) fail(`no password for NATS user "${user}" in ${file} (use --generate to make them)`);
  passwords[user] = randomBytes(24).toString('hex');
  changed = true;
}
if (changed) {
  // A file of other secrets gets a "nats" object; a file of NATS passwords only stays flat.
  const flat = !nested && wanted.some((u) => u in stored);
  const next = flat
    ? { ...stored, ...passwords }
    : { ...stored, nats: nested ? { ...source, ...passwords } : passwords };
  writeFileSync(file, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

const config = natsServerConfig({
  root: values.root,
  passwords: passwords as Record<NatsUser, string>,
  adminPassword: values.admin ? passwords.admin : undefined,
  host: values.host,
  port: Number(values.port),
  storeDir: values['store-dir'],
  tls: values['tls-cert'] && values['tls-key'] ? { cert: values['tls-cert'], key: values['tls-key'] } : undefined,
  pidFile: values['pid-file'],
});
if (values.out) writeFileSync(values.out, config, { mode: 0o600 });
else process.stdout.write(config);
