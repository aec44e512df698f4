import { randomUUID } from 'node:crypto';
import type { Msg, NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { readGatewayConfig, startGateway, type RunningGateway } from '@loyalty/gateway';
import { staffClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';
import { until } from '../../../test/support/until.ts';
import { signIn, type StaffApi } from '../../../test/support/staff.ts';

/**
 * Staff tokens cached at the gateway: a verified token is answered without asking identity (the
 * NATS round trip is saved), and a sign-out, a role change, a deactivation or the tenant's
 * deactivation acts at once on every replica (identity's `credentials-changed` broadcast), even
 * for a lookup that was in flight when it happened.
 */
let sys: TestSystem;
let second: RunningGateway;
let subjects: Subjects;
let staff1: StaffApi;
let staff2: StaffApi;

beforeAll(async () => {
  // A long TTL: whatever stops working here stopped because of the broadcast, not the TTL.
  sys = await startTestSystem({
    services: ['identity'],
    env: { REQUEST_TIMEOUT_MS: '20000', AUTH_CACHE_TTL_MS: '600000' },
  });
  second = await startGateway(readGatewayConfig(sys.envFor('gateway')), { clock: sys.clock });
  subjects = new Subjects(sys.env.SUBJECT_ROOT);
  staff1 = staffClient(sys.url);
  staff2 = staffClient(second.url);
}, 60_000);
afterAll(async () => {
  await second?.stop();
  await sys?.stop();
});

/** A sandbox tenant with a manager and a clerk (role staff), both signed in. */
async function team(): Promise<{
  tenantId: number;
  manager: string;
  managerEmail: string;
  clerk: string;
  clerkId: number;
}> {
  const { tenantId } = await sys.tenant();
  const managerEmail = `maria.${randomUUID().slice(0, 8)}@cornercoffee.example`;
  await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, {
    email: managerEmail,
    name: 'Maria Lopez',
    role: 'manager',
  });
  const manager = await signIn(staff1, tenantId, managerEmail);
  const invited = await staff1('POST', '/staff/v1/staff', {
    token: manager,
    body: { email: `tom.${randomUUID().slice(0, 8)}@cornercoffee.example`, name: 'Tom Berg', role: 'staff' },
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(invited.status, JSON.stringify(invited.body)).toBe(200);
  const clerkUser = invited.body.data!.staff as { id: number; email: string };
  const clerk = await signIn(staff1, tenantId, clerkUser.email);
  return { tenantId, manager, managerEmail, clerk, clerkId: clerkUser.id };
}

/** Both replicas have read their sockets (a broadcast published before an answer is read before it). */
const bothRead = () => Promise.all([sys.gateway, second].map((g) => fetch(`${g.url}/healthz`)));

/** Counts the gateway's questions to identity's `internal.staff.authenticate` (an observer on the subject). */
async function countQuestions(): Promise<{ count(): Promise<number>; close(): Promise<void> }> {
  const observer = await connectAs('admin', { url: sys.env.NATS_URL });
  const asked = observer.subscribe(subjects.op('identity', 'internal.staff.authenticate'));
  let questions = 0;
  void (async () => {
    for await (const _m of asked) questions += 1;
  })();
  await observer.flush();
  return {
    async count() {
      await observer.flush();
      return questions;
    },
    async close() {
      asked.unsubscribe();
      await observer.close();
    },
  };
}

describe('staff tokens cached at the gateway', () => {
  it('a cached token is answered without asking identity (one question for many calls)', async () => {
    // The manager's token is cached on the first replica (the clerk's invitation used it), not the second.
    const { manager, clerk } = await team();
    const questions = await countQuestions();
    try {
      for (const staff of [staff2, staff1])
        for (let i = 0; i < 10; i += 1)
          expect((await staff('GET', '/staff/v1/me', { token: manager })).status).toBe(200);
      // Twenty calls asked identity once: the second replica's first.
      expect(await questions.count()).toBe(1);
      // A burst with a token no replica holds yet asks once too.
      const burst = await Promise.all(
        Array.from({ length: 20 }, () => staff1('GET', '/staff/v1/me', { token: clerk })),
      );
      expect(burst.map((r) => r.status)).toEqual(burst.map(() => 200));
      expect(await questions.count()).toBe(2);
    } finally {
      await questions.close();
    }
  });

  it('a sign-out on one replica refuses the token on both at once', async () => {
    const { manager } = await team();
    for (const staff of [staff1, staff2])
      expect((await staff('GET', '/staff/v1/me', { token: manager })).status).toBe(200);
    // Both replicas now trust the token without asking identity.
    const questions = await countQuestions();
    try {
      for (const staff of [staff1, staff2])
        expect((await staff('GET', '/staff/v1/me', { token: manager })).status).toBe(200);
      expect(await questions.count()).toBe(0);
    } finally {
      await questions.close();
    }

    const out = await staff2('POST', '/staff/v1/auth/logout', { token: manager });
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    // No wait: identity broadcast the sign-out before it answered.
    await bothRead();
    for (const staff of [staff1, staff2]) {
      const r = await staff('GET', '/staff/v1/me', { token: manager });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'invalid_staff_token' });
    }
  });

  it('a role change and a deactivation act at once on both replicas', async () => {
    const { manager, clerk, clerkId } = await team();
    for (const staff of [staff1, staff2]) {
      const r = await staff('GET', '/staff/v1/staff', { token: clerk });
      expect(r.status).toBe(403);
      expect(r.body.error).toMatchObject({ code: 'insufficient_role' });
    }
    const promote = await staff1('POST', `/staff/v1/staff/${clerkId}`, {
      token: manager,
      body: { role: 'manager' },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(promote.status, JSON.stringify(promote.body)).toBe(200);
    await bothRead();
    for (const staff of [staff1, staff2])
      expect((await staff('GET', '/staff/v1/staff', { token: clerk })).status).toBe(200);

    const deactivate = await staff2('POST', `/staff/v1/staff/${clerkId}`, {
      token: manager,
      body: { active: false },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(deactivate.status, JSON.stringify(deactivate.body)).toBe(200);
    await bothRead();
    for (const staff of [staff1, staff2]) {
      const r = await staff('GET', '/staff/v1/me', { token: clerk });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'invalid_staff_token' });
    }
    // The manager's own token goes on.
    for (const staff of [staff1, staff2])
      expect((await staff('GET', '/staff/v1/me', { token: manager })).status).toBe(200);
  });

  it("the tenant's deactivation refuses its staff at once on both replicas", async () => {
    const { tenantId, manager, clerk } = await team();
    for (const staff of [staff1, staff2])
      for (const token of [manager, clerk]) expect((await staff('GET', '/staff/v1/me', { token })).status).toBe(200);
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/deactivate`, { reason: 'contract ended' });
    await bothRead();
    for (const staff of [staff1, staff2])
      for (const token of [manager, clerk]) {
        const r = await staff('GET', '/staff/v1/me', { token });
        expect(r.status).toBe(403);
        expect(r.body.error).toMatchObject({ code: 'tenant_inactive' });
      }
  });

  it("is never trusted past the session's end", async () => {
    const { manager } = await team();
    for (const staff of [staff1, staff2])
      expect((await staff('GET', '/staff/v1/me', { token: manager })).status).toBe(200);
    sys.clock.advance(12 * 3_600_000 + 60_000);
    for (const staff of [staff1, staff2]) {
      const r = await staff('GET', '/staff/v1/me', { token: manager });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'invalid_staff_token' });
    }
  });

  it('does not cache a lookup answered from before the sign-out', async () => {
    const { tenantId, managerEmail } = await team();
    // A session of its own, so no replica has cached it yet (past the 60 s between sign-in codes).
    sys.clock.advance(61_000);
    const manager = await signIn(staff1, tenantId, managerEmail);
    const authenticate = subjects.op('identity', 'internal.staff.authenticate');
    const gatewayNc = await connectAs('gateway', { url: sys.env.NATS_URL });
    const identityNc = await connectAs('identity', { url: sys.env.NATS_URL });
    let fake: ReturnType<NatsConnection['subscribe']> | undefined;
    try {
      // Identity's genuine answer for the token, while it is valid.
      const genuine = await gatewayNc.request(
        authenticate,
        JSON.stringify({ meta: { request_id: 'race' }, data: { staff_token: manager } }),
        { timeout: 5_000 },
      );
      expect(genuine.json<{ ok: boolean }>().ok).toBe(true);

      // Identity is slow: the first replica's lookup is held here.
      await sys.stopService('identity');
      let held: Msg | undefined;
      fake = identityNc.subscribe(authenticate, { callback: (_e, m) => void (held ??= m) });
      await identityNc.flush();
      const inFlight = staff1('GET', '/staff/v1/me', { token: manager });
      await until(() => held !== undefined);

      // The sign-out happens (on the other replica) and is broadcast while that lookup is in flight.
      await sys.startService('identity');
      const out = await staff2('POST', '/staff/v1/auth/logout', { token: manager });
      expect(out.status, JSON.stringify(out.body)).toBe(200);
      await bothRead();

      // Then the held answer (from before the sign-out) arrives: it answers its own request only.
      held!.respond(genuine.data);
      expect((await inFlight).status).toBe(200);
    } finally {
      fake?.unsubscribe();
      await gatewayNc.close();
      await identityNc.close();
    }
    for (const staff of [staff1, staff2])
      expect((await staff('GET', '/staff/v1/me', { token: manager })).status).toBe(401);
  });
});
