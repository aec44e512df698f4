import { expect, it } from 'vitest';
import { createLogger } from '../src/index.ts';

it('writes JSON lines with the level by name, the service, and secrets redacted', () => {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('ledger', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) });
  log.info({ req: { api_key: 'sk_secret' } }, 'hello');
  log.warn('careful');
  log.debug('not at info');
  expect(lines.map((l) => [l.level, l.msg, l.service])).toEqual([
    ['info', 'hello', 'ledger'],
    ['warn', 'careful', 'ledger'],
  ]);
  expect(lines[0]!.req).toEqual({ api_key: '[redacted]' });
});

it('redacts every configured path on every line and in child loggers, again and again', () => {
  // @pinojs/redact is patched to parse each path once: the parsed paths are reused for each line.
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('gateway', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) });
  for (let i = 0; i < 3; i++) {
    const child = log.child({ request_id: `r${i}` });
    child.info(
      {
        app: { api_key: `k${i}`, name: 'shop' },
        member: { member_token: `t${i}`, code: '123456', pin: '0000' },
        secret: 's',
        endpoint: { secret: 's', previous_secret: 'p' },
        req: { headers: { 'x-api-key': `k${i}`, 'x-member-token': `t${i}`, accept: 'json' } },
      },
      'line',
    );
  }
  expect(lines).toHaveLength(3);
  for (const [i, l] of lines.entries()) {
    expect(l).toMatchObject({
      request_id: `r${i}`,
      app: { api_key: '[redacted]', name: 'shop' },
      member: { member_token: '[redacted]', code: '[redacted]', pin: '[redacted]' },
      secret: '[redacted]',
      endpoint: { secret: '[redacted]', previous_secret: '[redacted]' },
      req: { headers: { 'x-api-key': '[redacted]', 'x-member-token': '[redacted]', accept: 'json' } },
    });
  }
});
