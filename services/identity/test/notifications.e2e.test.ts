import { randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';

/**
 * Member notifications are paced (MAIL_NOTIFICATIONS_PER_SECOND) before their transaction opens:
 * a burst of events turns into evenly spaced mails, and the mails waiting for their turn hold no
 * database connection (they held one each, idle in transaction, and starved sign-ins).
 */
let sys: TestSystem;
let nc: NatsConnection;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity'],
    env: { MAIL_NOTIFICATIONS_PER_SECOND: '4', MAIL_CONCURRENCY: '8' },
  });
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
});
afterAll(async () => {
  await nc?.drain();
  await sys?.stop();
});

it('spaces a burst of notifications at the configured pace, holding no connection while they wait', async () => {
  const t = await sys.tenant();
  const api = apiClient(sys.url, t);
  const members = await Promise.all(
    Array.from({ length: 6 }, async (_, i) => {
      const email = `paced${i}.${Date.now()}@example.com`;
      const r = await api('POST', '/api/v1/auth/member/register', {
        body: {
          name: `Paced ${i}`,
          email,
          phone: `+1666${String(1_000_000 + i * 7919 + (Date.now() % 1000)).slice(-7)}`,
          accepts_emails: true,
        },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return { id: (r.body.data!.member as { id: number }).id, email };
    }),
  );
  const subjects = new Subjects(sys.env.SUBJECT_ROOT!);
  const js = nc.jetstream();
  for (const [i, m] of members.entries()) {
    const id = randomUUID();
    const event = {
      id,
      type: 'ledger.points_earned',
      tenant_id: t.tenantId,
      occurred_at: new Date().toISOString(),
      data: { member_id: m.id, card_id: 1, points: 10 + i, new_balance: 10 + i },
    };
    await js.publish(subjects.event('ledger', 'points_earned'), JSON.stringify(event), { msgID: id });
  }

  const notified = () => sys.mail.messages.filter((m) => m.subject.startsWith('You earned'));
  let mostIdleInTransaction = 0;
  const deadline = Date.now() + 10_000;
  while (notified().length < members.length && Date.now() < deadline) {
    const { rows } = await sys.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'identity' AND state LIKE 'idle in transaction%'`,
    );
    mostIdleInTransaction = Math.max(mostIdleInTransaction, rows[0]!.n);
    await new Promise((r) => setTimeout(r, 25));
  }

  const mails = notified();
  expect(mails.map((m) => m.to).sort()).toEqual(members.map((m) => m.email).sort());
  const times = mails.map((m) => m.at).sort((a, b) => a - b);
  expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(1_000); // 6 mails at 4 a second: 5 gaps of 250 ms
  expect(mostIdleInTransaction).toBeLessThanOrEqual(2); // one mail's transaction at a time, not all six waiting
});
