import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { operations, operatorOperations, staffApiOperations } from '@loyalty/contracts';
import { natsPermissions, natsServerConfig, natsUsers, type NatsUser } from '../src/index.ts';

const passwords = Object.fromEntries(natsUsers.map((u) => [u, `${u}-password-0123456789`])) as Record<NatsUser, string>;
const js = ['$JS.API.INFO', '$JS.API.STREAM.INFO.LOYALTY_EVENTS', '$JS.API.STREAM.CREATE.LOYALTY_EVENTS'];
const consumer = [
  '$JS.API.CONSUMER.INFO.LOYALTY_EVENTS.*',
  '$JS.API.CONSUMER.CREATE.LOYALTY_EVENTS.>',
  '$JS.API.CONSUMER.DURABLE.CREATE.LOYALTY_EVENTS.*',
  '$JS.API.CONSUMER.MSG.NEXT.LOYALTY_EVENTS.*',
  '$JS.ACK.LOYALTY_EVENTS.>',
];

describe('natsPermissions', () => {
  it('lets the gateway publish exactly the public, operator and staff operations and authenticate', () => {
    const p = natsPermissions('loyalty', 'gateway');
    const expected = [
      ...Object.values(operations),
      ...Object.values(operatorOperations),
      ...Object.values(staffApiOperations),
    ].flatMap((op) =>
      // An operation routed by its job id may be sent to whichever service owns the job.
      (op.route ? ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] : [op.service]).map(
        (service) => `loyalty.${service}.${op.operation}`,
      ),
    );
    // The gateway's own calls: credentials, staff tokens, and a mail's one-click unsubscribe.
    const authenticate = [
      'loyalty.identity.internal.authenticate',
      'loyalty.identity.internal.staff.authenticate',
      'loyalty.identity.internal.consent.unsubscribe',
    ];
    expect(p.publish.sort()).toEqual([...new Set(expected), ...authenticate].sort());
    expect(p.publish.filter((s) => s.includes('.internal.'))).toEqual([...authenticate].sort());
    expect(p.publish.some((s) => s.startsWith('$JS'))).toBe(false);
    expect(p.subscribe).toEqual(['_INBOX_gateway.>', 'loyalty.broadcast.credentials-changed']);
    expect(p.allowResponses).toBe(false);
  });

  it('gives each service its own subjects, the internal operations it calls and the JetStream API it needs', () => {
    expect(natsPermissions('loyalty', 'identity')).toEqual({
      publish: [
        // A member's erasure and export ask every service for its part.
        'loyalty.ledger.internal.member_data.erase',
        'loyalty.claims.internal.member_data.erase',
        'loyalty.referrals.internal.member_data.erase',
        'loyalty.webhooks.internal.member_data.erase',
        'loyalty.ledger.internal.member_data.export',
        'loyalty.claims.internal.member_data.export',
        'loyalty.referrals.internal.member_data.export',
        'loyalty.webhooks.internal.member_data.export',
        // A merge asks the services holding a member's records; an offboarding, every service.
        'loyalty.ledger.internal.member_data.merge',
        'loyalty.claims.internal.member_data.merge',
        'loyalty.referrals.internal.member_data.merge',
        'loyalty.ledger.internal.tenant_data.start',
        'loyalty.claims.internal.tenant_data.start',
        'loyalty.referrals.internal.tenant_data.start',
        'loyalty.webhooks.internal.tenant_data.start',
        '_INBOX_gateway.>',
        '_INBOX_ledger.>',
        '_INBOX_claims.>',
        '_INBOX_referrals.>',
        '_INBOX_webhooks.>',
        '_INBOX.>',
        'loyalty.events.identity.>',
        'loyalty.broadcast.credentials-changed',
        'loyalty.broadcast.members-changed',
        ...js,
        ...consumer,
      ],
      subscribe: ['loyalty.identity.>', '$SRV.>', '_INBOX_identity.>'],
      allowResponses: false,
    });
    expect(natsPermissions('loyalty', 'ledger')).toEqual({
      publish: [
        'loyalty.identity.internal.member.resolve',
        'loyalty.identity.internal.member_otp.issue',
        'loyalty.identity.internal.member_otp.verify',
        'loyalty.identity.internal.member.lookup',
        'loyalty.identity.internal.tenant.get',
        '_INBOX_gateway.>',
        '_INBOX_identity.>',
        '_INBOX_claims.>',
        '_INBOX_referrals.>',
        '_INBOX.>',
        'loyalty.events.ledger.>',
        'loyalty.broadcast.cards-changed',
        ...js,
      ],
      subscribe: [
        'loyalty.ledger.>',
        '$SRV.>',
        '_INBOX_ledger.>',
        'loyalty.broadcast.cards-changed',
        'loyalty.broadcast.members-changed',
      ],
      allowResponses: false,
    });
    expect(natsPermissions('loyalty', 'claims')).toEqual({
      publish: [
        'loyalty.identity.internal.member.get_many',
        'loyalty.identity.internal.claim_otp.issue',
        'loyalty.identity.internal.claim_otp.verify',
        'loyalty.ledger.internal.card.get',
        'loyalty.ledger.internal.reward.get',
        'loyalty.ledger.internal.points.debit',
        'loyalty.ledger.internal.points.hold',
        'loyalty.ledger.internal.points.release_hold',
        'loyalty.ledger.internal.points.balances',
        '_INBOX_gateway.>',
        '_INBOX_identity.>',
        '_INBOX.>',
        'loyalty.events.claims.>',
        ...js,
      ],
      subscribe: ['loyalty.claims.>', '$SRV.>', '_INBOX_claims.>'],
      allowResponses: false,
    });
    expect(natsPermissions('loyalty', 'referrals')).toEqual({
      publish: [
        'loyalty.ledger.internal.card.get',
        'loyalty.ledger.internal.points.credit',
        'loyalty.identity.internal.member.resolve',
        'loyalty.identity.internal.member.get_many',
        '_INBOX_gateway.>',
        '_INBOX_identity.>',
        '_INBOX.>',
        'loyalty.events.referrals.>',
        ...js,
        ...consumer,
      ],
      subscribe: ['loyalty.referrals.>', '$SRV.>', '_INBOX_referrals.>'],
      allowResponses: false,
    });
    expect(natsPermissions('loyalty', 'webhooks')).toEqual({
      publish: [
        'loyalty.identity.internal.tenant.get',
        '_INBOX_gateway.>',
        '_INBOX_identity.>',
        '_INBOX.>',
        'loyalty.events.webhooks.>',
        'loyalty.broadcast.webhook-endpoints-changed',
        ...js,
        ...consumer,
      ],
      subscribe: ['loyalty.webhooks.>', '$SRV.>', '_INBOX_webhooks.>', 'loyalty.broadcast.webhook-endpoints-changed'],
      // Every service replies to its callers (and operators' tools) by an explicit allow of their
      // inboxes: no per-message bookkeeping in nats-server.
      allowResponses: false,
    });
  });

  it('uses wildcards for the root and the stream when one server serves every root', () => {
    const p = natsPermissions('*', 'claims');
    expect(p.publish).toContain('*.identity.internal.claim_otp.issue');
    expect(p.publish).toContain('$JS.API.STREAM.INFO.*');
    expect(p.subscribe).toContain('*.claims.>');
  });
});

describe('natsServerConfig', () => {
  const config = natsServerConfig({
    root: 'loyalty',
    passwords,
    host: '0.0.0.0',
    port: 4222,
    storeDir: '/data/js',
    tls: { cert: '/tls/cert.pem', key: '/tls/key.pem' },
    bcryptCost: 4,
  });

  it('stores only bcrypt hashes of the passwords', () => {
    for (const user of natsUsers) {
      expect(config).not.toContain(passwords[user]);
      const block = config.slice(config.indexOf(`user: "${user}"`));
      const hash = /password: "([^"]+)"/.exec(block)![1]!;
      expect(hash).toMatch(/^\$2[ab]\$04\$/);
      expect(bcrypt.compareSync(passwords[user], hash)).toBe(true);
    }
  });

  it('writes the listen address, JetStream store, TLS and one user per service', () => {
    expect(config).toContain('listen: "0.0.0.0:4222"');
    expect(config).toContain('jetstream: { store_dir: "/data/js" }');
    expect(config).toContain('tls: { cert_file: "/tls/cert.pem", key_file: "/tls/key.pem" }');
    expect(config.match(/user: "/g)).toHaveLength(natsUsers.length);
    expect(natsUsers).toContain('webhooks');
    expect(config).not.toContain('user: "admin"');
  });

  it('refuses short passwords and invalid roots', () => {
    expect(() =>
      natsServerConfig({ root: 'loyalty', passwords: { ...passwords, ledger: 'short' }, storeDir: '/d' }),
    ).toThrow(/16 characters/);
    expect(() => natsServerConfig({ root: 'a.b', passwords, storeDir: '/d' })).toThrow(/invalid subject root/);
  });
});
