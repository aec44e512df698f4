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
