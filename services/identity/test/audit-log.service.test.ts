import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from 'nats';
import { AUDIT_EVENT, staffOperations, type StaffMeta } from '@loyalty/contracts';
import { eventually } from '../../../test/support/staff.ts';
import { connectAs, localNats } from '../../../test/support/nats.ts';
import { startService, type ServiceRunner } from '../../../test/support/service-runner.ts';

/**
 * Identity's audit log on its own: audit events published on JetStream as other services' outboxes
 * publish them are appended to their tenant's chain exactly once, in one unbroken sequence per
 * tenant, with two replicas consuming at once; a malformed event is dropped without stopping the log.
 */
let identity: ServiceRunner<'identity'>;
let nc: NatsConnection;
const TENANT = 700_000 + Math.floor(Math.random() * 100_000);
const OTHER = TENANT + 1;

const managerMeta = (tenant: number, role: 'manager' | 'staff' = 'manager'): StaffMeta => ({
  request_id: randomUUID(),
  tenant_id: tenant,
  staff: { id: 1, role, email: 'maria@example.com' },
  session_id: 1,
});

/** An audit event as a service's outbox relay publishes it (Nats-Msg-Id: `msgId`, the event id unless told). */
async function publish(tenant: number, data: unknown, id = randomUUID(), msgId = id): Promise<void> {
  const event = {
    id,
    type: `ledger.${AUDIT_EVENT}`,
    tenant_id: tenant,
    occurred_at: new Date().toISOString(),
    data,
  };
  await nc.jetstream().publish(identity.subjects.event('ledger', AUDIT_EVENT), JSON.stringify(event), { msgID: msgId });
}

const entry = (n: number) => ({
  actor: { type: 'staff', id: 3, email: 'maria@example.com', role: 'manager' },
  action: 'balance.adjusted',
  target: { member_id: 42, card_id: 2, transaction_id: n },
  amounts: { points: n },
  details: { reason: `adjustment ${n}` },
  request_id: `req-${n}`,
});

async function head(tenant: number): Promise<number> {
  const { rows } = await identity.db.query<{ seq: number }>(
    'SELECT seq FROM identity.audit_heads WHERE tenant_id = $1',
    [tenant],
  );
  return Number(rows[0]?.seq ?? 0);
}

beforeAll(async () => {
  identity = await startService('identity');
  await identity.replica(); // two consumers share the durable
  nc = await connectAs('admin', { url: localNats().url });
}, 60_000);
afterAll(async () => {
  await nc?.close();
  await identity?.stop();
});

describe('audit log consumer', () => {
  it('appends every event once, in one sequence per tenant, however they arrive', async () => {
    const repeated = randomUUID();
    await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => publish(TENANT, entry(i + 1))),
      ...Array.from({ length: 10 }, (_, i) => publish(OTHER, entry(100 + i))),
      // The same event published again under another message id (JetStream does not drop it):
      publish(TENANT, entry(999), repeated),
      publish(TENANT, entry(999), repeated, `${repeated}-again`),
      // A malformed one (no actor) is dropped; the log goes on.
      publish(TENANT, { action: 'x', target: {}, request_id: 'r' }),
    ]);
    await publish(TENANT, entry(1000)); // after the malformed one
    await eventually(async () => ((await head(TENANT)) === 42 && (await head(OTHER)) === 10 ? true : undefined));
    const { rows } = await identity.db.query<{ seq: number; event_id: string }>(
      'SELECT seq, event_id FROM identity.audit_log WHERE tenant_id = $1 ORDER BY seq',
      [TENANT],
    );
    expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 42 }, (_, i) => i + 1));
    expect(rows.filter((r) => r.event_id === repeated)).toHaveLength(1);

    for (const tenant of [TENANT, OTHER]) {
      const verdict = await identity.request(staffOperations['staff.audit.verify'], managerMeta(tenant), {});
      expect(verdict).toMatchObject({ valid: true, problem: null, rows_checked: tenant === TENANT ? 42 : 10 });
    }
    const page = await identity.request(staffOperations['staff.audit.list'], managerMeta(TENANT), {
      action: 'balance',
      limit: 5,
      offset: 0,
    });
    expect(page.pagination.total).toBe(42);
    expect(page.entries.map((e) => e.seq)).toEqual([42, 41, 40, 39, 38]);
    expect(page.entries[0]).toMatchObject({ service: 'ledger', amounts: { points: 1000 } });
  });

  it('refuses the audit log to a staff role at the service too (the gateway checks it first)', async () => {
    const r = await identity.call(staffOperations['staff.audit.verify'], managerMeta(TENANT, 'staff'), {});
    expect(r).toMatchObject({ ok: false, error: { code: 'insufficient_role' } });
  });
});
