import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { webhookTypeOfDomainEvent, webhookUrlProblem } from '@loyalty/contracts';
import { verifyWebhookSignature } from '@loyalty/sdk';
import { addressProblem, ipLiteral } from '../src/domain/address-policy.ts';
import { receives } from '../src/domain/endpoint.ts';
import { publicEvent } from '../src/domain/payload.ts';
import { backoffMs, nextAttemptAt, RETRY_WINDOW_MS } from '../src/domain/retry-schedule.ts';
import { newSigningSecret, signatureHeader } from '../src/domain/signature.ts';

describe('address policy (SSRF)', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'], // cloud metadata
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'], // IPv4-mapped: judged as the IPv4 address
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['64:ff9b::7f00:1', 'rfc6052'], // NAT64 of 127.0.0.1
    ['2002:7f00:1::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['::7f00:1', 'ipv4Compatible'], // ::127.0.0.1, the deprecated IPv4-compatible form
    ['::a00:1', 'ipv4Compatible'], // ::10.0.0.1
    ['::1:0:0:1', 'notGlobalUnicast'], // ::/8, reserved
    ['400::1', 'notGlobalUnicast'], // outside 2000::/3
    ['e000::1', 'notGlobalUnicast'],
  ])('refuses %s (%s)', (address, range) => {
    expect(addressProblem(address)).toBe(range);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:93.184.216.34'])(
    'allows the public address %s',
    (address) => {
      expect(addressProblem(address)).toBeUndefined();
    },
  );

  it('tells IP literals in URLs from names', () => {
    expect(ipLiteral('[::1]')).toBe('::1');
    expect(ipLiteral('10.0.0.1')).toBe('10.0.0.1');
    expect(ipLiteral('example.com')).toBeUndefined();
    expect(ipLiteral('localhost')).toBeUndefined();
  });
});

describe('URL rules', () => {
  it('accepts absolute http(s) URLs and refuses the rest', () => {
    expect(webhookUrlProblem('https://crm.example.com/hooks?x=1')).toBeUndefined();
    expect(webhookUrlProblem('http://example.com:8080/')).toBeUndefined();
    expect(webhookUrlProblem('ftp://example.com/')).toMatch(/http or https/);
    expect(webhookUrlProblem('file:///etc/passwd')).toMatch(/http or https/);
    expect(webhookUrlProblem('https://user:secret@example.com/')).toMatch(/user name or password/);
    expect(webhookUrlProblem('https://example.com/#x')).toMatch(/fragment/);
    expect(webhookUrlProblem('/relative')).toMatch(/absolute/);
    // Port 0 (also written :00) is no port to connect to.
    expect(webhookUrlProblem('https://example.com:0/hook')).toMatch(/port 0/);
    expect(webhookUrlProblem('http://example.com:00/')).toMatch(/port 0/);
    expect(webhookUrlProblem('https://example.com:65535/')).toBeUndefined();
  });
});

describe('retry schedule', () => {
  const start = new Date('2026-01-01T00:00:00Z');
  const expires = new Date(start.getTime() + RETRY_WINDOW_MS);

  it('doubles from 30 s up to 6 h, each wait jittered between half and all of it', () => {
    expect([1, 2, 3, 4, 10, 11, 12, 20].map(backoffMs)).toEqual([
      30_000, 60_000, 120_000, 240_000, 15_360_000, 21_600_000, 21_600_000, 21_600_000,
    ]);
    expect(nextAttemptAt(1, start, expires, () => 0)!.getTime() - start.getTime()).toBe(15_000);
    expect(nextAttemptAt(1, start, expires, () => 0.999999)!.getTime() - start.getTime()).toBeCloseTo(30_000, -1);
  });

  it('stops at the expiry: the last attempt is at it, and after it there is none', () => {
    const nearEnd = new Date(expires.getTime() - 60_000);
    expect(nextAttemptAt(15, nearEnd, expires, () => 0.5)).toEqual(expires);
    expect(nextAttemptAt(16, expires, expires)).toBeNull();
    // Counting every attempt of a delivery that always fails: about twenty over the three days.
    let now = start;
    let attempts = 1;
    for (
      let next = nextAttemptAt(1, now, expires, () => 0.5);
      next;
      next = nextAttemptAt(attempts, now, expires, () => 0.5)
    ) {
      now = next;
      attempts += 1;
    }
    expect(now).toEqual(expires);
    expect(attempts).toBeGreaterThan(15);
    expect(attempts).toBeLessThan(30);
  });
});

describe('signatures', () => {
  it('is Stripe-style HMAC-SHA256 of "<t>.<body>", and the SDK verifies it', async () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({
      id: 'e1',
      type: 'ping',
      created_at: '2026-01-01T00:00:00.000Z',
      tenant_id: 1,
      data: {},
    });
    const header = signatureHeader([secret], 1_767_225_600, body);
    const expected = createHmac('sha256', secret).update(`1767225600.${body}`).digest('hex');
    expect(header).toBe(`t=1767225600,v1=${expected}`);
    await expect(
      verifyWebhookSignature({ payload: body, header, secret, now: 1_767_225_600_000 }),
    ).resolves.toMatchObject({ id: 'e1' });
    // Raw bytes work too, and any of several secrets.
    await expect(
      verifyWebhookSignature({
        payload: Buffer.from(body),
        header,
        secret: ['whsec_old', secret],
        now: 1_767_225_700_000,
      }),
    ).resolves.toMatchObject({ type: 'ping' });
  });

  it('signs with every secret during a rotation; the SDK accepts either', async () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    const header = signatureHeader([a, b], 100, '{}');
    expect(header.split(',')).toHaveLength(3);
    for (const s of [a, b])
      await expect(verifyWebhookSignature({ payload: '{}', header, secret: s, now: 100_000 })).resolves.toEqual({});
  });

  it('the SDK refuses a missing or malformed header and an old timestamp', async () => {
    const secret = newSigningSecret();
    const header = signatureHeader([secret], 1000, '{}');
    await expect(verifyWebhookSignature({ payload: '{}', header: undefined, secret })).rejects.toMatchObject({
      code: 'missing_signature',
    });
    await expect(verifyWebhookSignature({ payload: '{}', header: 't=1000', secret })).rejects.toMatchObject({
      code: 'malformed_signature',
    });
    await expect(verifyWebhookSignature({ payload: '{}', header: 'v1=zz', secret })).rejects.toMatchObject({
      code: 'malformed_signature',
    });
    await expect(verifyWebhookSignature({ payload: '{}', header, secret, now: 1_301_000 })).rejects.toMatchObject({
      code: 'timestamp_out_of_tolerance',
    });
    await expect(
      verifyWebhookSignature({ payload: '{}', header, secret, now: 1_301_000, toleranceSeconds: 600 }),
    ).resolves.toEqual({});
  });

  it('makes 256-bit secrets', () => {
    const s = newSigningSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(newSigningSecret()).not.toBe(s);
  });
});

describe('routing', () => {
  it('maps domain events to public types, keeping only the documented fields', () => {
    expect(webhookTypeOfDomainEvent.get('ledger.points_earned')).toBe('points.earned');
    expect(webhookTypeOfDomainEvent.get('ledger.reward_claimed')).toBeUndefined();
    const made = publicEvent({
      id: '6a0c2b1e-2f0e-4d43-9c55-2a4b0f8f1d11',
      type: 'ledger.points_earned',
      tenant_id: 5,
      occurred_at: '2026-01-01T00:00:00.000Z',
      data: {
        member_id: 1,
        card_id: 2,
        points: 3,
        purchase_amount: 3,
        reference: null,
        transaction_id: 9,
        previous_balance: 0,
        new_balance: 3,
        event: 'staff_added_points',
        internal: 'x',
      },
    });
    expect(made && 'event' in made && JSON.parse(made.event.body)).toEqual({
      id: '6a0c2b1e-2f0e-4d43-9c55-2a4b0f8f1d11',
      type: 'points.earned',
      created_at: '2026-01-01T00:00:00.000Z',
      tenant_id: 5,
      data: {
        transaction_id: 9,
        member_id: 1,
        card_id: 2,
        points: 3,
        purchase_amount: 3,
        reference: null,
        previous_balance: 0,
        new_balance: 3,
      },
    });
    expect(
      publicEvent({
        id: 'x',
        type: 'ledger.points_earned',
        tenant_id: 5,
        occurred_at: '2026-01-01T00:00:00.000Z',
        data: {},
      }),
    ).toHaveProperty('problem');
    expect(
      publicEvent({
        id: 'x',
        type: 'ledger.reward_claimed',
        tenant_id: 5,
        occurred_at: '2026-01-01T00:00:00.000Z',
        data: {},
      }),
    ).toBeUndefined();
  });

  it('an endpoint gets the types it asked for, from its creation on', () => {
    const created_at = new Date('2026-01-01T00:00:00Z');
    expect(receives({ event_types: ['*'], created_at }, 'claim.approved', created_at)).toBe(true);
    expect(receives({ event_types: ['points.earned'], created_at }, 'points.earned', new Date('2026-01-02'))).toBe(
      true,
    );
    expect(receives({ event_types: ['points.earned'], created_at }, 'points.redeemed', new Date('2026-01-02'))).toBe(
      false,
    );
    expect(receives({ event_types: ['*'], created_at }, 'points.earned', new Date('2025-12-31'))).toBe(false);
  });
});

describe('webhook metrics', () => {
  it('puts a delivery in the event-to-delivery histogram by the attempt that delivered it', async () => {
    const { Metrics, systemClock } = await import('@loyalty/runtime');
    const { WebhookMetrics } = await import('../src/metrics.ts');
    const metrics = new Metrics('webhooks');
    const pool = { query: () => Promise.reject(new Error('no database here')) } as never;
    const m = new WebhookMetrics(metrics, pool, systemClock, 10);
    m.final('delivered', 1_500, 1);
    m.final('delivered', 90_000, 3);
    m.final('failed');
    const text = await metrics.registry.metrics();
    const count = (attempt: string, le: string) =>
      Number(
        new RegExp(
          `^loyalty_webhook_event_to_delivery_seconds_bucket\\{le="${le}",[^}]*attempt="${attempt}"[^}]*\\} (\\d+)$`,
          'm',
        ).exec(text)?.[1],
      );
    expect([count('first', '60'), count('retry', '60'), count('retry', '600')]).toEqual([1, 0, 1]);
    expect(text).toMatch(/^loyalty_webhook_deliveries_total\{[^}]*outcome="failed"[^}]*\} 1$/m);
  });
});
