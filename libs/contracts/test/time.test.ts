import { describe, expect, it } from 'vitest';
import { isExportTime } from '../src/ops/exports.ts';
import { parseIsoTime, readIsoTime } from '../src/time.ts';

const problem = (v: string) => {
  const r = readIsoTime(v);
  return 'problem' in r ? r.problem : undefined;
};

describe('readIsoTime', () => {
  it('reads the dates and times that were accepted before, as the same instants', () => {
    for (const v of [
      '2024-03-01',
      '2024-02-29',
      '2000-02-29',
      '0001-01-01',
      '9999-12-31',
      '2024-03-01T10:00:00Z',
      '2024-03-01T10:00Z',
      '2024-03-01T10:00:00.123Z',
      '2024-03-01T10:00:00.123456789Z',
      '2024-03-01T10:00:00+01:00',
      '2024-03-01T10:00:00-0530',
      '2024-03-01 10:00:00Z',
      '2024-03-01t10:00:00z',
    ])
      expect(parseIsoTime(v)?.getTime(), v).toBe(new Date(v).getTime());
    expect(parseIsoTime('0001-01-01')?.toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(parseIsoTime('2024-03-01T10:00:00+01:00')?.toISOString()).toBe('2024-03-01T09:00:00.000Z');
  });

  it('refuses a day the month does not have, naming it', () => {
    expect(problem('2022-02-30')).toBe('has day 30 of February 2022, which has 28 days');
    expect(problem('2021-04-31T10:00:00Z')).toBe('has day 31 of April 2021, which has 30 days');
    expect(problem('2023-02-29')).toBe('has day 29 of February 2023, which has 28 days');
    expect(problem('1900-02-29')).toBe('has day 29 of February 1900, which has 28 days');
    expect(problem('2026-01-00')).toBe('has day 00 of January 2026, which has 31 days');
    expect(problem('2026-13-01')).toBe('has month 13: months run from 01 to 12');
    expect(problem('2026-00-01')).toBe('has month 00: months run from 01 to 12');
  });

  it('refuses year 0000 and years beyond 9999', () => {
    expect(problem('0000-01-01')).toBe('has year 0000: years run from 0001 to 9999');
    expect(problem('0000-01-01T00:00:00Z')).toBe('has year 0000: years run from 0001 to 9999');
    expect(problem('+275760-09-13T00:00:00Z')).toMatch(/years run from 0001 to 9999$/);
    expect(problem('10000-01-01')).toMatch(/years run from 0001 to 9999$/);
    expect(problem('-000001-01-01')).toMatch(/years run from 0001 to 9999$/);
  });

  it('refuses times and offsets a day does not have, and anything that is not the form', () => {
    expect(problem('2024-03-01T24:00:00Z')).toBe('has the time 24:00:00, which a day does not have');
    expect(problem('2024-03-01T10:60Z')).toBe('has the time 10:60, which a day does not have');
    expect(problem('2024-03-01T10:00:61Z')).toBe('has the time 10:00:61, which a day does not have');
    expect(problem('2024-03-01T10:00:00+24:00')).toBe(
      'has the offset +24:00, which is not one (at most 23:59 either way)',
    );
    for (const v of [
      '',
      'yesterday',
      '2024-03-01junk',
      '2024-3-1',
      '2024-03-01T10',
      '2024-03-01T10:00:00+01',
      '20240301',
    ])
      expect(problem(v), v).toBe('must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z)');
  });

  it('asks for the offset of a time (the server would read one without it in its own time zone), not of a date', () => {
    for (const v of ['2024-03-01T10:00:00', '2024-03-01T10:00', '2024-03-01 10:00:00.5'])
      expect(problem(v), v).toBe(
        'must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z) with its offset (Z or +01:00)',
      );
    expect(parseIsoTime('2024-03-01')?.toISOString()).toBe('2024-03-01T00:00:00.000Z');
    expect(isExportTime('2024-03-01T10:00:00Z')).toBe(true);
    expect(isExportTime('2024-03-01T10:00:00')).toBe(false);
    expect(isExportTime('2022-02-30')).toBe(false);
    expect(isExportTime('0000-01-01')).toBe(false);
  });
});
