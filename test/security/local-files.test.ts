import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { mailStore } from '../../scripts/mail-store.mjs';

/**
 * The local mail sink's files hold members' one-time codes: readable by this user only, also
 * when an earlier version left them world-readable.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const mode = (file: string) => statSync(file).mode & 0o777;

it('writes var/mail.log and var/mail/* as 0600 in a 0700 directory', () => {
  const varDir = mkdtempSync(path.join(tmpdir(), 'loyalty-var-'));
  dirs.push(varDir);
  const store = mailStore(varDir);
  const line = store.save({ to: 'm@example.com', subject: 'Your sign-in code', text: 'Your code is 123456.' });
  expect(line).toContain('123456');
  expect(mode(store.logFile)).toBe(0o600);
  expect(mode(store.dir)).toBe(0o700);
  const files = readdirSync(store.dir);
  expect(files).toHaveLength(1);
  expect(mode(path.join(store.dir, files[0]!))).toBe(0o600);
});

it('closes up a mail log and mail directory an earlier version made world-readable', () => {
  const varDir = mkdtempSync(path.join(tmpdir(), 'loyalty-var-'));
  dirs.push(varDir);
  const first = mailStore(varDir);
  chmodSync(first.dir, 0o755);
  writeFileSync(first.logFile, 'old line with code 654321\n', { mode: 0o644 });
  chmodSync(first.logFile, 0o644);
  const store = mailStore(varDir);
  expect(mode(store.logFile)).toBe(0o600);
  expect(mode(store.dir)).toBe(0o700);
});
