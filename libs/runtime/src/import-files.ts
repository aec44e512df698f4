/**
 * Reading import files piece by piece: CSV (RFC 4180: quoted fields, doubled quotes, CRLF or LF,
 * newlines inside quotes) and JSON Lines. A reader takes the bytes of one step and gives back the
 * complete records with the physical line each starts on, and the bytes of an incomplete last
 * record to carry into the next step (kept in the job's checkpoint).
 */

export interface FileRecord {
  line: number;
  /** Field values by column name, or a problem with the whole line. */
  fields?: Map<string, string>;
  problem?: { column: string; reason: string };
}

export interface ReadState {
  /** The next physical line number. */
  line: number;
  /** CSV: the header's column names, once read. */
  header: string[] | null;
}

const BOM = '\uFEFF';

/**
 * A NUL character (U+0000, `\u0000` in JSON) is in no value the platform keeps: PostgreSQL's text
 * cannot hold it. A line with one is an error of the line, before anything stores a part of it
 * (an unknown column's name in the error list, the header in the job's checkpoint).
 */
const NUL_REASON = 'holds a NUL character (U+0000), which no value may contain';
const hasNul = (s: string): boolean => s.includes('\0');

/**
 * Split `text` (whole records, unless `final` is false: then the last, possibly partial, record is
 * left over) into CSV records with the line each starts on.
 */
function csvRecords(text: string, final: boolean, firstLine: number) {
  const records: { line: number; values: string[]; unterminated?: boolean }[] = [];
  const len = text.length;
  let i = 0;
  let line = firstLine;
  let consumed = 0;
  while (i < len) {
    const start = line;
    const values: string[] = [];
    let field = '';
    let quoted = false;
    let unterminated = false;
    for (;;) {
      if (i >= len) {
        if (quoted) unterminated = true;
        values.push(field);
        break;
      }
      if (quoted) {
        // Up to the next quote at once: a doubled one is a quote, a single one closes the field.
        const run = quotedRun(text, i);
        line += newlines(run.part);
        field += run.part;
        i = run.next;
        quoted = !run.closed;
        continue;
      }
      const c = text.charCodeAt(i);
      if (c === QUOTE && field === '') {
        quoted = true;
        i += 1;
        continue;
      }
      // An unquoted run: up to the next comma or line break, taken as one slice.
      const j = unquotedEnd(text, i);
      if (j > i) {
        field += text.slice(i, j);
        i = j;
      } else if (c === COMMA) {
        values.push(field);
        field = '';
        i += 1;
      } else if (c === LF || text.charCodeAt(i + 1) === LF) {
        values.push(field);
        i += c === CR ? 2 : 1;
        line += 1;
        break;
      } else {
        field += '\r';
        i += 1;
      }
    }
    const complete = i < len || text.endsWith('\n');
    if (!final && (!complete || unterminated)) return { records, rest: text.slice(consumed), line: start };
    records.push({ line: start, values, ...(unterminated ? { unterminated } : {}) });
    consumed = i;
  }
  return { records, rest: '', line };
}

/** Where an unquoted run from `i` ends: the next comma or line break (or the end). */
function unquotedEnd(text: string, i: number): number {
  let j = i;
  while (j < text.length) {
    const d = text.charCodeAt(j);
    if (d === COMMA || d === LF || d === CR) break;
    j += 1;
  }
  return j;
}

/** A quoted field's text from `i` to its next quote (a doubled quote is one), where reading goes on, and whether the field closed. */
function quotedRun(text: string, i: number): { part: string; next: number; closed: boolean } {
  const q = text.indexOf('"', i);
  if (q === -1) return { part: text.slice(i), next: text.length, closed: false };
  if (text.charCodeAt(q + 1) === QUOTE) return { part: text.slice(i, q + 1), next: q + 2, closed: false };
  return { part: text.slice(i, q), next: q + 1, closed: true };
}

/** The line feeds in `text`. */
function newlines(text: string): number {
  let n = 0;
  for (let k = text.indexOf('\n'); k !== -1; k = text.indexOf('\n', k + 1)) n += 1;
  return n;
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;

/** The records of one step's text (`carry` + the step's bytes, decoded), with what is left over. */
export function readRecords(
  format: 'csv' | 'jsonl',
  bytes: Buffer,
  final: boolean,
  state: ReadState,
): { records: FileRecord[]; rest: Buffer; state: ReadState } {
  // Only whole lines are decoded (a UTF-8 sequence never contains a newline byte), unless final.
  const cut = final ? bytes.length : bytes.lastIndexOf(0x0a) + 1;
  let text = bytes.subarray(0, cut).toString('utf8');
  let tail = bytes.subarray(cut);
  if (state.line === 1 && text.startsWith(BOM)) text = text.slice(1);
  if (format === 'jsonl') {
    const records: FileRecord[] = [];
    let line = state.line;
    const lines = text.split('\n');
    if (!final && lines[lines.length - 1] === '') lines.pop();
    for (const raw of lines) {
      const l = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (l.trim() !== '') records.push(jsonRecord(l, line));
      line += 1;
    }
    return { records, rest: tail, state: { ...state, line } };
  }
  const parsed = csvRecords(text, final, state.line);
  tail = Buffer.concat([Buffer.from(parsed.rest, 'utf8'), tail]);
  let header = state.header;
  const records: FileRecord[] = [];
  for (const r of parsed.records) {
    if (r.values.length === 1 && (r.values[0] ?? '').trim() === '') continue;
    if (!header) {
      header = r.values.map((v) => v.trim().toLowerCase());
      if (header.some(hasNul)) {
        // Kept in the job's checkpoint and named in errors, neither of which can hold a NUL: the
        // names are kept with U+FFFD in its place (so unknown columns), the header is an error.
        header = header.map((h) => h.replaceAll('\0', '\uFFFD'));
        records.push({ line: r.line, problem: { column: '(header)', reason: NUL_REASON } });
      }
      // A column named twice would give each line two values, one of them dropped without a word.
      const twice = header.filter((h, k) => h !== '' && header?.indexOf(h) !== k);
      for (const name of new Set(twice))
        records.push({ line: r.line, problem: { column: '(header)', reason: `names the column ${name} twice` } });
      continue;
    }
    if (r.values.some(hasNul)) {
      records.push({ line: r.line, problem: { column: '(line)', reason: NUL_REASON } });
      continue;
    }
    if (r.unterminated) {
      records.push({ line: r.line, problem: { column: '(line)', reason: 'a quoted field is not closed' } });
      continue;
    }
    if (r.values.length !== header.length) {
      records.push({
        line: r.line,
        problem: { column: '(line)', reason: `has ${r.values.length} fields; the header has ${header.length}` },
      });
      continue;
    }
    const h = header;
    records.push({ line: r.line, fields: new Map(r.values.map((v, k) => [h[k] ?? '', v])) });
  }
  return { records, rest: tail, state: { line: parsed.line, header } };
}

function jsonRecord(text: string, line: number): FileRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { line, problem: { column: '(line)', reason: notJson(err instanceof Error ? err.message : '') } };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { line, problem: { column: '(line)', reason: 'must be a JSON object' } };
  const fields = new Map<string, string>();
  for (const [k, v] of Object.entries(value)) {
    if (hasNul(k) || (typeof v === 'string' && hasNul(v)))
      return { line, problem: { column: '(line)', reason: NUL_REASON } };
    if (v === null || v === undefined) continue;
    if (typeof v === 'object') return { line, problem: { column: k, reason: 'must be a string, number or boolean' } };
    // Names are case-insensitive: `Name` and `name` on one line are the same column given twice.
    if (fields.has(k.toLowerCase()))
      return { line, problem: { column: k.toLowerCase(), reason: 'is given twice (names are case-insensitive)' } };
    fields.set(k.toLowerCase(), String(v));
  }
  return { line, fields };
}

/**
 * Why a line is not JSON, in words that do not depend on the engine's message (V8's name a token
 * and quote the line, or give a position, or neither): where reading stopped (character 1 is the
 * line's first) when the engine says, else that it could not be read.
 */
function notJson(message: string): string {
  if (/unexpected end/i.test(message)) return 'not a JSON object: the line ends inside it (a missing } or ")';
  const at = /at position (\d+)/.exec(message);
  if (at) return `not a JSON object: it cannot be read from character ${Number(at[1]) + 1} on`;
  return 'not a JSON object: it cannot be read (one object per line, names and strings in double quotes)';
}

/**
 * A line's fields read by name (trimmed, '' when absent), with each column the kind does not know
 * and the line gives a value added to `problems` (an empty unknown column is no error: a
 * spreadsheet's trailing column; a filled one is, as a typo would lose data quietly).
 */
export function lineFields(
  fields: Map<string, string>,
  known: readonly string[],
  problems: { column: string; reason: string }[],
): (column: string) => string {
  for (const [k, v] of fields)
    if (!known.includes(k) && v.trim() !== '')
      problems.push({ column: k, reason: `unknown column (known: ${known.join(', ')})` });
  return (column) => (fields.get(column) ?? '').trim();
}
