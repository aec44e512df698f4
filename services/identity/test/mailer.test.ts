import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@loyalty/runtime';
import { MailSink } from '../../../test/support/mail-sink.ts';
import { Mailer, transportOptions } from '../src/mail/mailer.ts';
import { notificationPace } from '../src/mail/notifications.ts';

describe('Mailer', () => {
  let sink: MailSink;
  let url: string;
  beforeAll(async () => {
    sink = new MailSink();
    url = await sink.start();
  });
  afterAll(async () => {
    await sink.stop();
  });

  it('keeps its SMTP connections open between mails (pooled)', async () => {
    const mailer = new Mailer(url, url, 'Loyalty <no-reply@loyalty.local>', createLogger('mailer-test', 'silent'), {
      connections: 2,
    });
    try {
      for (let i = 0; i < 4; i++)
        await mailer.send(
          { to: `seq${i}@example.com`, subject: `seq ${i}`, text: 'hello' },
          true,
          undefined,
          'notification',
        );
      expect(sink.connections).toBe(1); // four mails in a row over one connection
      await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          mailer.send({ to: `par${i}@example.com`, subject: `par ${i}`, text: 'hello' }, true),
        ),
      );
    } finally {
      mailer.close();
    }
    expect(sink.messages.map((m) => m.subject).sort()).toEqual([
      ...Array.from({ length: 6 }, (_, i) => `par ${i}`),
      ...Array.from({ length: 4 }, (_, i) => `seq ${i}`),
    ]);
    // Ten mails, a handful of connections (nodemailer may replace one while the burst starts);
    // unpooled it was one connection per mail.
    expect(sink.connections).toBeLessThanOrEqual(3);
  });

  it('sends a code over connections of its own, never behind notifications', async () => {
    const mailer = new Mailer(url, url, 'Loyalty <no-reply@loyalty.local>', createLogger('mailer-test', 'silent'), {
      connections: 1,
    });
    try {
      const before = sink.connections;
      const notifications = Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          mailer.send({ to: `n${i}@example.com`, subject: `n ${i}`, text: 'x' }, true, undefined, 'notification'),
        ),
      );
      await mailer.send({ to: 'code@example.com', subject: 'code', text: 'x' }, true);
      const codeArrived = sink.messages.findIndex((m) => m.subject === 'code');
      const notificationsBefore = sink.messages.slice(0, codeArrived).filter((m) => /^n \d+$/.test(m.subject)).length;
      await notifications;
      expect(notificationsBefore).toBeLessThan(20); // it did not wait for the queue of 20 on the one notification connection
      expect(sink.connections - before).toBe(2); // one for notifications, one for codes
    } finally {
      mailer.close();
    }
  });

  it('keeps a subject on one header line, bounded, whatever the caller put in it', async () => {
    const mailer = new Mailer(url, url, 'Loyalty <no-reply@loyalty.local>', createLogger('mailer-test', 'silent'));
    const before = sink.messages.length;
    try {
      await mailer.send(
        {
          to: 'subject@example.com',
          subject: `Hi\r\nBcc: victim@example.com\r\n\r\nbody ${'s'.repeat(300)}`,
          text: 'x',
        },
        false,
      );
    } finally {
      mailer.close();
    }
    const got = sink.messages.slice(before);
    expect(got.map((m) => m.to)).toEqual(['subject@example.com']);
    expect(got[0]!.subject.startsWith('Hi Bcc: victim@example.com body sss')).toBe(true);
    expect(Array.from(got[0]!.subject).length).toBeLessThanOrEqual(150);
  });

  it('sends no sandbox mail without a sandbox server, not even to the live one', async () => {
    const mailer = new Mailer(
      url,
      undefined,
      'Loyalty <no-reply@loyalty.local>',
      createLogger('mailer-test', 'silent'),
    );
    const before = sink.messages.length;
    try {
      await mailer.send({ to: 'sandboxed@example.com', subject: 'sandbox', text: 'code 123456' }, true);
      await mailer.send({ to: 'live@example.com', subject: 'live', text: 'code 654321' }, false);
    } finally {
      mailer.close();
    }
    expect(sink.messages.slice(before).map((m) => m.to)).toEqual(['live@example.com']);
  });

  it('paces notifications evenly (notificationPace), or not at all with 0', async () => {
    expect(notificationPace(0)).toBeUndefined();
    const pace = notificationPace(20)!;
    const started = Date.now();
    for (let i = 0; i < 6; i++) await pace();
    expect(Date.now() - started).toBeGreaterThanOrEqual(240); // 5 gaps of 50 ms
  });

  it('pools by default and lets the URL decide what it names', () => {
    const plain = transportOptions('smtp://127.0.0.1:1025', 8);
    expect(plain).toMatchObject({
      pool: true,
      maxConnections: 8,
      host: '127.0.0.1',
      port: 1025,
      socketTimeout: 10_000,
    });
    expect(typeof plain.getSocket).toBe('function');
    const tls = transportOptions('smtps://user:p%40ss@mail.example.com:465/?maxConnections=3', 8);
    expect(tls).toMatchObject({
      pool: true,
      maxConnections: 3,
      secure: true,
      host: 'mail.example.com',
      port: 465,
      auth: { user: 'user', pass: 'p@ss' },
    });
    expect(tls.getSocket).toBeUndefined(); // TLS sockets are nodemailer's own
  });
});
