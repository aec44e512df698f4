import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityOperations, ledgerOperations, type ReplyMessage } from '@loyalty/contracts';
import { callService, type NatsUser } from '@loyalty/runtime';
import { connectAs, localNats } from '../support/nats.ts';
import { apiClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * NATS is not a trusted network: against the real nats-server running the generated config
 * (the project-owned one, test/support/nats.ts), nobody connects without credentials, each
 * service's user reaches only its own subjects and the internal operations it calls, the gateway
 * only the public ones, and a forged `meta` claiming a sandbox gets no one-time code.
 */
let sys: TestSystem;
let root: string;
let live: { tenantId: number; appId: string; apiKey: string };
let member: { email: string; id: number };
const open: NatsConnection[] = [];

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  root = sys.env.SUBJECT_ROOT!;
  live = await sys.tenant({ sandbox: false });
  const email = `live-${randomBytes(4).toString('hex')}@example.com`;
  const r = await apiClient(sys.url, live)('POST', '/api/v1/auth/member/register', {
    body: { name: 'Live Member', email, phone: `+4915${Math.floor(1e8 + Math.random() * 9e8)}` },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.data).not.toHaveProperty('otp_code'); // a live tenant, through the gateway
  member = { email, id: (r.body.data!.member as { id: number }).id };
});

afterAll(async () => {
  for (const nc of open) await nc.close().catch(() => undefined);
  await sys?.stop();
});

/** A connection as `user` that records the server's errors (permission violations). */
async function as(user: NatsUser | 'admin'): Promise<{ nc: NatsConnection; errors: { subject?: string }[] }> {
  const nc = await connectAs(user, { url: sys.env.NATS_URL });
  open.push(nc);
  const errors: { subject?: string; op?: string }[] = [];
  void (async () => {
    for await (const s of nc.status()) {
      const ctx = (s as { permissionContext?: { operation: string; subject: string } }).permissionContext;
      if (s.type === 'error' && s.data === 'PERMISSIONS_VIOLATION')
        errors.push({ subject: ctx?.subject, op: ctx?.operation });
    }
  })();
  return { nc, errors };
}

/** Everything published on `subject`, seen by the unrestricted harness user. */
async function spy(subject: string): Promise<{ count: () => number }> {
  const { nc } = await as('admin');
  let n = 0;
  nc.subscribe(subject, { callback: () => n++ });
  await nc.flush();
  return { count: () => n };
}

const meta = (extra: Record<string, unknown> = {}) => ({
  request_id: `sec-${randomBytes(4).toString('hex')}`,
  tenant_id: live.tenantId,
  app_id: live.appId,
  sandbox: true,
  scopes: [],
  ...extra,
});

const settle = () => new Promise((r) => setTimeout(r, 300));

describe('connecting', () => {
  it('refuses a connection without credentials', async () => {
    await expect(connect({ servers: localNats().url, reconnect: false })).rejects.toMatchObject({
      code: 'AUTHORIZATION_VIOLATION',
    });
  });

  it('refuses a wrong password', async () => {
    await expect(
      connect({ servers: localNats().url, user: 'ledger', pass: 'not-the-password-0123456789', reconnect: false }),
    ).rejects.toMatchObject({ code: 'AUTHORIZATION_VIOLATION' });
  });
});

describe("the ledger's user", () => {
  it("cannot publish to identity's internal subjects the ledger does not call", async () => {
    const { nc, errors } = await as('ledger');
    const subject = `${root}.${identityOperations.issueClaimOtp.service}.${identityOperations.issueClaimOtp.operation}`;
    const seen = await spy(subject);
    const reply = await callService(
      nc,
      subject,
      { meta: meta(), data: { member_email: member.email, context: {} } },
      'r',
      1_000,
    );
    expect(reply).toMatchObject({ ok: false, error: { code: 'service_unavailable' } });
    await settle();
    expect(seen.count()).toBe(0); // the server dropped it: nobody, identity included, received it
    expect(errors).toContainEqual(expect.objectContaining({ subject, op: 'publish' }));
  });

  it('can call the identity operation it uses (internal.member.resolve)', async () => {
    const { nc, errors } = await as('ledger');
    const op = identityOperations.resolveMember;
    const reply = await callService(
      nc,
      `${root}.${op.service}.${op.operation}`,
      {
        meta: meta({ sandbox: false }),
        data: { member_id: member.id },
      },
      'r',
      2_000,
    );
    expect(reply).toMatchObject({ ok: true });
    expect(errors).toEqual([]);
  });

  it.each([['identity.>'], ['claims.>'], ['identity.internal.claim_otp.issue']])(
    'cannot subscribe to another service’s subjects (<root>.%s)',
    async (suffix) => {
      const { nc, errors } = await as('ledger');
      const subject = `${root}.${suffix}`;
      let received = 0;
      const failures: string[] = [];
      nc.subscribe(subject, {
        callback: (err) => (err ? failures.push(err.code) : received++),
      });
      await nc.flush();
      await settle();
      const { nc: admin } = await as('admin');
      admin.publish(subject.replace('>', 'x'), 'hello');
      await admin.flush();
      await settle();
      expect(received).toBe(0);
      expect(failures).toContain('PERMISSIONS_VIOLATION');
      expect(errors).toContainEqual(expect.objectContaining({ subject, op: 'subscription' }));
    },
  );

  it("cannot read other users' replies (their inboxes)", async () => {
    const { nc, errors } = await as('ledger');
    for (const subject of ['_INBOX.>', '_INBOX_gateway.>']) nc.subscribe(subject, { callback: () => undefined });
    await nc.flush();
    await settle();
    expect(errors.map((e) => e.subject).sort()).toEqual(['_INBOX.>', '_INBOX_gateway.>']);
  });
});

describe("the gateway's user", () => {
  it.each([
    [ledgerOperations.creditPoints, { card_id: 1, member_id: 1, points: 1000, reason: 'forged' }],
    [identityOperations.issueClaimOtp, { member_email: 'x@example.com', context: {} }],
  ])('cannot call the internal operation $operation', async (op, data) => {
    const { nc, errors } = await as('gateway');
    const subject = `${root}.${op.service}.${op.operation}`;
    const seen = await spy(subject);
    const reply = await callService(nc, subject, { meta: meta(), data }, 'r', 1_000);
    expect(reply).toMatchObject({ ok: false, error: { code: 'service_unavailable' } });
    await settle();
    expect(seen.count()).toBe(0);
    expect(errors).toContainEqual(expect.objectContaining({ subject, op: 'publish' }));
  });

  it('cannot subscribe to service subjects', async () => {
    const { nc, errors } = await as('gateway');
    nc.subscribe(`${root}.ledger.>`, { callback: () => undefined });
    nc.subscribe(`${root}.identity.internal.authenticate`, { callback: () => undefined });
    await nc.flush();
    await settle();
    expect(errors.map((e) => e.subject).sort()).toEqual([`${root}.identity.internal.authenticate`, `${root}.ledger.>`]);
  });

  it('calls public operations; a forged sandbox meta for a live tenant gets no code', async () => {
    const { nc, errors } = await as('gateway');
    const reply = await callService<Record<string, unknown>>(
      nc,
      `${root}.identity.member.register`,
      {
        meta: meta({ idempotency_key: randomBytes(8).toString('hex') }),
        data: {
          name: 'Forged',
          email: `forged-${randomBytes(4).toString('hex')}@example.com`,
          phone: '+4915112345678',
        },
      },
      'r',
      2_000,
    );
    expect(reply, JSON.stringify(reply)).toMatchObject({ ok: true, data: { member: { name: 'Forged' } } });
    expect((reply as { data: Record<string, unknown> }).data).not.toHaveProperty('otp_code');
    expect(errors).toEqual([]);
  });
});

describe("the webhooks service's user", () => {
  it('can ask identity whether a tenant exists, and nothing else of identity', async () => {
    const { nc, errors } = await as('webhooks');
    const op = identityOperations.getTenant;
    const ok = await callService(nc, `${root}.${op.service}.${op.operation}`, { meta: meta(), data: {} }, 'r', 2_000);
    expect(ok).toMatchObject({ ok: true, data: { tenant: { id: live.tenantId, sandbox: false } } });
    const resolve = identityOperations.resolveMember;
    const subject = `${root}.${resolve.service}.${resolve.operation}`;
    const seen = await spy(subject);
    const refused = await callService(nc, subject, { meta: meta(), data: { member_id: member.id } }, 'r', 1_000);
    expect(refused).toMatchObject({ ok: false, error: { code: 'service_unavailable' } });
    await settle();
    expect(seen.count()).toBe(0);
    expect(errors).toContainEqual(expect.objectContaining({ subject, op: 'publish' }));
  });

  it("cannot publish another service's events or listen to the ledger's requests", async () => {
    const { nc, errors } = await as('webhooks');
    nc.publish(`${root}.events.ledger.points_earned`, '{}');
    nc.subscribe(`${root}.ledger.>`, { callback: () => undefined });
    await nc.flush();
    await settle();
    expect(errors.map((e) => e.subject).sort()).toEqual([`${root}.events.ledger.points_earned`, `${root}.ledger.>`]);
  });
});

describe('a forged meta', () => {
  const issue = `${identityOperations.issueClaimOtp.service}.${identityOperations.issueClaimOtp.operation}`;

  it('claiming sandbox for a live tenant gets no one-time code (claims user, allowed to issue)', async () => {
    const { nc, errors } = await as('claims');
    sys.clock.advance(61_000); // the code cooldown since the registration's sign-in code (one per member)
    const reply: ReplyMessage<Record<string, unknown>> = await callService(
      nc,
      `${root}.${issue}`,
      { meta: meta({ sandbox: true }), data: { member_email: member.email, context: { claim: 'forged' } } },
      'r',
      2_000,
    );
    expect(errors).toEqual([]);
    expect(reply).toMatchObject({ ok: true, data: { member_id: member.id } });
    expect((reply as { data: Record<string, unknown> }).data).not.toHaveProperty('otp_code');
  });

  it('naming a tenant that does not exist gets tenant_not_found, never a code', async () => {
    const { nc } = await as('claims');
    const reply = await callService(
      nc,
      `${root}.${issue}`,
      { meta: meta({ tenant_id: 2_000_000_000 }), data: { member_email: member.email, context: {} } },
      'r',
      2_000,
    );
    expect(reply).toMatchObject({ ok: false, error: { code: 'tenant_not_found' } });
  });
});
