import bcrypt from 'bcryptjs';
import {
  identityOperations,
  importInternalOperations,
  internalOperations,
  ledgerOperations,
  memberDataInternalOperations,
  memberMergeInternalOperations,
  operations,
  tenantDataInternalOperations,
  operatorOperations,
  services,
  staffApiOperations,
  Subjects,
  type ServiceName,
} from '@loyalty/contracts';

/**
 * The nats-server configuration of the platform: one user per service and one for the gateway,
 * each allowed exactly the subjects it uses (NATS is not a trusted network). Pure: the same
 * input gives the same permissions; only the bcrypt salts differ from run to run.
 */
export const natsUsers = ['gateway', ...services] as const;
export type NatsUser = (typeof natsUsers)[number];

/** A user's reply inbox prefix: nobody else may subscribe to it, so replies cannot be snooped. */
export function natsInboxPrefix(user: string): string {
  return `_INBOX_${user.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
  /** Responders may answer the requests they receive (reply subjects), nothing more. */
  allowResponses: boolean;
}

/** Which internal operations each service calls (read from its code: clients.ts). */
const calls: Record<ServiceName, { service: ServiceName; operation: string }[]> = {
  // A member's erasure and merge ask every service for its part.
  identity: [
    memberDataInternalOperations.ledgerErase,
    memberDataInternalOperations.claimsErase,
    memberDataInternalOperations.referralsErase,
    memberDataInternalOperations.webhooksErase,
    memberDataInternalOperations.ledgerExport,
    memberDataInternalOperations.claimsExport,
    memberDataInternalOperations.referralsExport,
    memberDataInternalOperations.webhooksExport,
    memberMergeInternalOperations.ledgerMerge,
    memberMergeInternalOperations.claimsMerge,
    memberMergeInternalOperations.referralsMerge,
    tenantDataInternalOperations.ledger,
    tenantDataInternalOperations.claims,
    tenantDataInternalOperations.referrals,
    tenantDataInternalOperations.webhooks,
  ],
  ledger: [
    identityOperations.resolveMember,
    identityOperations.issueMemberOtp,
    identityOperations.verifyMemberOtp,
    importInternalOperations.lookupMembers,
    // The operator's card creation, journal exports and report rebuilds name a tenant, which identity knows.
    identityOperations.getTenant,
  ],
  claims: [
    identityOperations.getMembers,
    identityOperations.issueClaimOtp,
    identityOperations.verifyClaimOtp,
    ledgerOperations.getCard,
    ledgerOperations.getReward,
    ledgerOperations.debitPoints,
    ledgerOperations.holdPoints,
    ledgerOperations.releaseHold,
    ledgerOperations.pointsBalances,
  ],
  referrals: [
    ledgerOperations.getCard,
    ledgerOperations.creditPoints,
    identityOperations.resolveMember,
    identityOperations.getMembers,
  ],
  webhooks: [identityOperations.getTenant],
};

/** Services reading the event stream through a durable pull consumer (EventConsumer). */
const consumers: ReadonlySet<ServiceName> = new Set(['identity', 'referrals', 'webhooks']);

/**
 * Every service answers requests through an explicit allow of its callers' reply inboxes, not
 * `allow_responses`. With `allow_responses`, nats-server records the reply subject of every message
 * the user receives, JetStream deliveries included (each `$JS.ACK...` subject is new), and that
 * bookkeeping cost ~0.2 ms of server CPU per event consumed: measured 5.1 s against 0.75 s for
 * 20,000 events (bench/README.md). A service that consumes every event pays it on every earn, and
 * every responder pays it on every request. Its callers' inboxes are theirs alone
 * (`_INBOX_<user>`: only they may subscribe, and their reply subjects carry a random token), and
 * `_INBOX.` is the default prefix of operators' tools (`$SRV` discovery), which no service user may
 * read. The callers of a service: the gateway (every service has public operations) and the
 * services whose `calls` name one of its operations.
 */
function callersOf(user: ServiceName): NatsUser[] {
  const callers = services.filter((caller) => calls[caller].some((op) => op.service === user));
  return ['gateway', ...callers];
}

/** Broadcasts (core NATS, no queue group): who sends, who listens. */
function broadcasts(s: Subjects, user: NatsUser): { publish: string[]; subscribe: string[] } {
  if (user === 'gateway') return { publish: [], subscribe: [s.credentialsChanged()] };
  if (user === 'identity') return { publish: [s.credentialsChanged(), s.membersChanged()], subscribe: [] };
  if (user === 'ledger') return { publish: [s.cardsChanged()], subscribe: [s.cardsChanged(), s.membersChanged()] };
  if (user === 'webhooks') return { publish: [s.webhookEndpointsChanged()], subscribe: [s.webhookEndpointsChanged()] };
  return { publish: [], subscribe: [] };
}

/** `root` is a concrete subject root (`loyalty`) or `*` (one server for test runs with random roots). */
export function natsPermissions(root: string, user: NatsUser): NatsPermissions {
  const s = new Subjects(root);
  const stream = root === '*' ? '*' : s.streamName();
  const inbox = `${natsInboxPrefix(user)}.>`;
  const b = broadcasts(s, user);
  if (user === 'gateway') {
    const publicOps = [
      ...Object.values(operations),
      ...Object.values(operatorOperations),
      ...Object.values(staffApiOperations),
    ].flatMap((op) =>
      // An operation routed by a parameter (a job id) may go to any service.
      op.route ? services.map((owner) => s.op(owner, op.operation)) : [s.op(op.service, op.operation)],
    );
    const { authenticate, authenticateStaff, unsubscribe } = internalOperations;
    return {
      publish: unique([
        ...publicOps,
        s.op(authenticate.service, authenticate.operation),
        s.op(authenticateStaff.service, authenticateStaff.operation),
        s.op(unsubscribe.service, unsubscribe.operation),
      ]),
      subscribe: unique([inbox, ...b.subscribe]),
      allowResponses: false,
    };
  }
  const jetstream = [
    '$JS.API.INFO',
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.CREATE.${stream}`,
    ...(consumers.has(user)
      ? [
          `$JS.API.CONSUMER.INFO.${stream}.*`,
          `$JS.API.CONSUMER.CREATE.${stream}.>`,
          `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.*`,
          `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
          `$JS.ACK.${stream}.>`,
        ]
      : []),
  ];
  return {
    publish: unique([
      ...calls[user].map((op) => s.op(op.service, op.operation)),
      ...callersOf(user).map((caller) => `${natsInboxPrefix(caller)}.>`),
      '_INBOX.>',
      `${root}.events.${user}.>`,
      ...b.publish,
      ...jetstream,
    ]),
    subscribe: unique([s.op(user, '>'), '$SRV.>', inbox, ...b.subscribe]),
    allowResponses: false,
  };
}

export interface NatsServerConfigOptions {
  /** Concrete subject root, or `*` for a server shared by test runs with random roots. */
  root: string;
  /** Plain passwords per user; stored in the config only as bcrypt hashes. */
  passwords: Record<NatsUser, string>;
  /**
   * An unrestricted user for operators' tools and the test harness (stream clean-up, event
   * injection). Leave it out in production unless an operator needs it.
   */
  adminPassword?: string;
  host?: string;
  port?: number;
  /** JetStream store directory. */
  storeDir: string;
  /** Server certificate and key (PEM paths): clients must then connect with TLS. */
  tls?: { cert: string; key: string };
  /** Written by the server so tools can signal it (reload). */
  pidFile?: string;
  /** bcrypt cost (10 by default). */
  bcryptCost?: number;
}

const q = (v: string): string => JSON.stringify(v);
const list = (items: string[]): string => `[${items.map(q).join(', ')}]`;

export function natsServerConfig(o: NatsServerConfigOptions): string {
  if (o.root !== '*' && !/^[A-Za-z0-9_-]+$/.test(o.root)) throw new Error(`invalid subject root: ${o.root}`);
  const cost = o.bcryptCost ?? 10;
  const hash = (password: string): string => {
    if (password.length < 16) throw new Error('NATS passwords must have at least 16 characters');
    return bcrypt.hashSync(password, cost);
  };
  const users = natsUsers.map((user) => {
    const p = natsPermissions(o.root, user);
    return [
      `    {`,
      `      user: ${q(user)}`,
      `      password: ${q(hash(o.passwords[user]))}`,
      `      permissions: {`,
      `        publish: { allow: ${list(p.publish)} }`,
      `        subscribe: { allow: ${list(p.subscribe)} }`,
      ...(p.allowResponses ? [`        allow_responses: true`] : []),
      `      }`,
      `    }`,
    ].join('\n');
  });
  if (o.adminPassword !== undefined)
    users.push(`    {\n      user: "admin"\n      password: ${q(hash(o.adminPassword))}\n    }`);
  return [
    `# Generated by scripts/nats-config.ts (libs/runtime/src/nats-auth.ts); do not edit by hand.`,
    `# Subject root: ${o.root}`,
    `listen: ${q(`${o.host ?? '127.0.0.1'}:${o.port ?? 4222}`)}`,
    ...(o.pidFile ? [`pid_file: ${q(o.pidFile)}`] : []),
    `jetstream: { store_dir: ${q(o.storeDir)} }`,
    ...(o.tls ? [`tls: { cert_file: ${q(o.tls.cert)}, key_file: ${q(o.tls.key)} }`] : []),
    `authorization: {`,
    `  users: [`,
    users.join('\n'),
    `  ]`,
    `}`,
    ``,
  ].join('\n');
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
