import { describe, expect, it } from 'vitest';
import { readRecords } from '../src/import-files.ts';

const read = (text: string) =>
  readRecords('jsonl', Buffer.from(text), true, { line: 1, header: null }).records.map((r) => [
    r.line,
    r.problem?.column,
    r.problem?.reason,
  ]);

describe('JSON Lines records', () => {
  it('give a line that is not JSON a clear reason, with where reading stopped when known', () => {
    expect(read('{"a":1}\n{oops\n{"a":1\n{"a":1}x\noops\n{"a":tru}\n{"a":"b\n[1]\n')).toEqual([
      [1, undefined, undefined],
      [2, '(line)', 'not a JSON object: it cannot be read from character 2 on'],
      [3, '(line)', 'not a JSON object: it cannot be read from character 7 on'],
      [4, '(line)', 'not a JSON object: it cannot be read from character 8 on'],
      [5, '(line)', 'not a JSON object: it cannot be read (one object per line, names and strings in double quotes)'],
      [6, '(line)', 'not a JSON object: it cannot be read (one object per line, names and strings in double quotes)'],
      [7, '(line)', expect.stringMatching(/^not a JSON object: /)],
      [8, '(line)', 'must be a JSON object'],
    ]);
    for (const [, , reason] of read('{oops\noops\n{"a":\n')) expect(reason).not.toMatch(/Unexpected|JSON at/);
  });
});
