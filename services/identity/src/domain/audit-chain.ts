import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { AUDIT_ANCHOR_TOKEN } from '@loyalty/contracts';
import { stableStringify } from '@loyalty/runtime';

/** The `prev_hash` of a tenant's first row. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * How a row's hash is made:
 * - 1: SHA-256 of its content (rows written before the chain was keyed; anyone can recompute it);
 * - 2: HMAC-SHA256 under a key derived from `AUDIT_KEY` (outside the database), which names the key
 *   by `key_id`: whoever can write the table but does not hold the key cannot make a row that verifies.
 */
export const LEGACY_CHAIN = 1;
export const KEYED_CHAIN = 2;
/**
 * - 3: as 2, but the entry's free text (`details`) is not hashed: the row carries a keyed digest of
 *   it (`details_digest`) and the details are kept beside the chain, so that an erasure can blank
 *   them (personal data in a staff note) and the chain still verifies. Details that are present
 *   must match their digest.
 */
export const DETAILS_APART_CHAIN = 3;

/** What a row's hash covers: every column but the hash itself and the time identity appended it. */
export interface ChainedContent {
  tenant_id: number;
  seq: number;
  event_id: string;
  service: string;
  occurred_at: string;
  actor: unknown;
  action: string;
  target: unknown;
  amounts: unknown;
  details: unknown;
  request_id: string;
  prev_hash: string;
}

/** A stored row as verification reads it. */
export interface ChainRow extends ChainedContent {
  hash: string;
  /** Absent: a row of the legacy form (version 1). */
  chain_version?: number;
  key_id?: string | null;
  /** Version 3: the keyed digest of the details the chain hashes instead of them. */
  details_digest?: string | null;
  /** Version 3: when the details were erased (they are null then); absent or null while they are kept. */
  details_erased_at?: string | null;
}

const contentOf = (row: ChainedContent): ChainedContent => ({
  tenant_id: row.tenant_id,
  seq: row.seq,
  event_id: row.event_id,
  service: row.service,
  occurred_at: row.occurred_at,
  actor: row.actor,
  action: row.action,
  target: row.target,
  amounts: row.amounts,
  details: row.details,
  request_id: row.request_id,
  prev_hash: row.prev_hash,
});

/**
 * Version 1 (legacy, public): SHA-256 (hex) of the row's content in a canonical form (sorted keys),
 * which includes prev_hash. Kept to verify the rows written before the chain was keyed.
 */
export function rowHash(row: ChainedContent): string {
  return createHash('sha256')
    .update(stableStringify(contentOf(row)))
    .digest('hex');
}

/** Version 2: HMAC-SHA256 (hex) under the row key of `keyId`, over the content, the version and the key id. */
export function keyedRowHash(rowKey: Buffer, keyId: string, row: ChainedContent): string {
  const content = { ...contentOf(row), chain_version: KEYED_CHAIN, key_id: keyId };
  return createHmac('sha256', rowKey).update(stableStringify(content)).digest('hex');
}

/** Version 3: as version 2, with the details' digest in place of the details. */
export function detailsApartRowHash(rowKey: Buffer, keyId: string, row: ChainedContent, detailsDigest: string): string {
  const { details: _details, ...rest } = contentOf(row);
  const content = { ...rest, details_digest: detailsDigest, chain_version: DETAILS_APART_CHAIN, key_id: keyId };
  return createHmac('sha256', rowKey).update(stableStringify(content)).digest('hex');
}

/**
 * The audit keys: `AUDIT_KEY` signs new rows and anchors; retired keys (`AUDIT_PREVIOUS_KEYS`) still
 * verify what they signed. A key is named by its id, a fingerprint that does not reveal it; rows and
 * anchors use keys derived from it, one per purpose, so an anchor's signature is never a row's hash.
 */
export class AuditKeyring {
  private readonly keys = new Map<string, { row: Buffer; anchor: Buffer; details: Buffer }>();
  readonly currentId: string;

  constructor(current: string, previous: readonly string[] = []) {
    this.currentId = this.add(current);
    for (const key of previous) this.add(key);
  }

  static keyId(key: string): string {
    return createHash('sha256').update(`loyalty-audit-key-id\n${key}`).digest('hex').slice(0, 16);
  }

  private add(key: string): string {
    const id = AuditKeyring.keyId(key);
    const derive = (purpose: string) => createHmac('sha256', key).update(purpose).digest();
    this.keys.set(id, {
      row: derive('loyalty-audit-row'),
      anchor: derive('loyalty-audit-anchor'),
      details: derive('loyalty-audit-details'),
    });
    return id;
  }

  has(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /**
   * The hash of a new row (version 3, keyed with the current key) and the digest of its details,
   * which the hash covers in their place. The digest is keyed too: erased details cannot be
   * guessed back from it.
   */
  seal(row: ChainedContent): { hash: string; chain_version: number; key_id: string; details_digest: string } {
    const key = this.keys.get(this.currentId);
    if (!key) throw new Error('the current audit key is missing from its keyring');
    const digest = this.detailsDigest(this.currentId, row.details);
    if (digest === undefined) throw new Error('the current audit key is missing from its keyring');
    return {
      hash: detailsApartRowHash(key.row, this.currentId, row, digest),
      chain_version: DETAILS_APART_CHAIN,
      key_id: this.currentId,
      details_digest: digest,
    };
  }

  /** The keyed digest of an entry's details under `keyId`; undefined for an unknown key. */
  detailsDigest(keyId: string, details: unknown): string | undefined {
    const key = this.keys.get(keyId);
    return key ? createHmac('sha256', key.details).update(stableStringify(details)).digest('hex') : undefined;
  }

  /** The keyed hash of a stored row under its key (version 2 or 3); undefined when that key is not in the ring. */
  rowHash(keyId: string, row: ChainedContent, detailsDigest?: string | null): string | undefined {
    const key = this.keys.get(keyId);
    if (!key) return undefined;
    return detailsDigest ? detailsApartRowHash(key.row, keyId, row, detailsDigest) : keyedRowHash(key.row, keyId, row);
  }

  /** The signature of an anchor under `keyId` (the current key unless told); undefined for an unknown key. */
  anchorSignature(anchor: AnchorContent, keyId = this.currentId): string | undefined {
    const key = this.keys.get(keyId);
    if (!key) return undefined;
    const text = ['loyalty-audit-anchor-v1', anchor.tenant_id, anchor.seq, anchor.hash, anchor.anchored_at].join('\n');
    return createHmac('sha256', key.anchor).update(text).digest('hex');
  }

  /** Whether `anchor` was signed by one of the ring's keys. */
  anchorSigned(anchor: AnchorContent & { key_id: string; signature: string }): boolean {
    const expected = this.anchorSignature(anchor, anchor.key_id);
    if (expected === undefined || !/^[0-9a-f]{64}$/.test(anchor.signature)) return false;
    return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(anchor.signature, 'hex'));
  }
}

/** What an anchor states: the tenant's chain head at a moment. */
export interface AnchorContent {
  tenant_id: number;
  seq: number;
  hash: string;
  /** ISO 8601 with milliseconds, UTC. */
  anchored_at: string;
}

export interface SignedAnchor extends AnchorContent {
  key_id: string;
  signature: string;
}

/**
 * An anchor in one string, to keep outside the platform and give back to `audit:verify --anchor`:
 * `v1.<tenant>.<seq>.<hash>.<anchored_at ms>.<key id>.<signature>`.
 */
export function anchorToken(a: SignedAnchor): string {
  return ['v1', a.tenant_id, a.seq, a.hash, Date.parse(a.anchored_at), a.key_id, a.signature].join('.');
}

/** The anchor a token stands for; undefined when it is not one. */
export function parseAnchorToken(token: string): SignedAnchor | undefined {
  if (!AUDIT_ANCHOR_TOKEN.test(token)) return undefined;
  const [, tenant, seq, hash, ms, keyId, signature] = token.split('.');
  const at = new Date(Number(ms));
  if (!tenant || !seq || !hash || !keyId || !signature || Number.isNaN(at.getTime())) return undefined;
  return {
    tenant_id: Number(tenant),
    seq: Number(seq),
    hash,
    anchored_at: at.toISOString(),
    key_id: keyId,
    signature,
  };
}

export interface ChainProblem {
  seq: number;
  reason: string;
}

/**
 * Checks a tenant's rows in sequence order, page by page: each row must be the next number, link
 * to the hash of the row before it, and hash to its stored hash under its version's algorithm
 * (a keyed row under its key). Legacy rows (version 1) may only come before the first keyed row:
 * a legacy row after a keyed one is a chain rebuilt with the public algorithm. Every signed anchor
 * must match the row at its position. `finish` compares the last row with the head identity keeps
 * (a deleted last row shows) and with the anchors (rows deleted under an anchor show). The first
 * problem is kept.
 */
export class ChainVerifier {
  private expectedSeq = 1;
  private prevHash = GENESIS_HASH;
  problem: ChainProblem | null = null;
  checked = 0;
  /** Rows of the legacy, unkeyed form (all before `keyedFrom`). */
  legacyRows = 0;
  /** The first keyed row, null while there is none. */
  keyedFrom: number | null = null;
  /** Rows whose details were erased (an erasure of personal data): their hash still verifies. */
  erasedDetails = 0;

  /** `anchors`: signed anchors by sequence number (those whose signature verified). */
  constructor(
    private readonly keyring: AuditKeyring,
    private readonly anchors: ReadonlyMap<number, SignedAnchor> = new Map(),
  ) {}

  add(row: ChainRow): void {
    if (this.problem) return;
    this.checked += 1;
    this.problem = this.sequenceProblem(row) ?? this.hashProblem(row) ?? this.anchorProblem(row);
    if (this.problem) return;
    this.prevHash = row.hash;
    this.expectedSeq += 1;
  }

  private sequenceProblem(row: ChainRow): ChainProblem | null {
    if (row.seq === this.expectedSeq) {
      return row.prev_hash === this.prevHash
        ? null
        : {
            seq: row.seq,
            reason: `row ${row.seq} does not link to row ${row.seq - 1}: the row before it was changed or replaced`,
          };
    }
    if (row.seq < this.expectedSeq) return { seq: row.seq, reason: `row ${row.seq} is out of sequence` };
    return {
      seq: this.expectedSeq,
      reason:
        row.seq - 1 > this.expectedSeq
          ? `rows ${this.expectedSeq} to ${row.seq - 1} are missing (deleted)`
          : `row ${this.expectedSeq} is missing (deleted)`,
    };
  }

  private hashProblem(row: ChainRow): ChainProblem | null {
    const version = row.chain_version ?? LEGACY_CHAIN;
    const changed = {
      seq: row.seq,
      reason: `row ${row.seq} was changed after it was written (its hash does not match)`,
    };
    if (version === LEGACY_CHAIN) {
      if (this.keyedFrom !== null)
        return {
          seq: row.seq,
          reason: `row ${row.seq} is unkeyed (the public algorithm) after keyed rows: the chain was rebuilt from row ${row.seq}`,
        };
      this.legacyRows += 1;
      return rowHash(row) === row.hash ? null : changed;
    }
    if (version !== KEYED_CHAIN && version !== DETAILS_APART_CHAIN)
      return { seq: row.seq, reason: `row ${row.seq} has an unknown chain version ${version}` };
    const apart = version === DETAILS_APART_CHAIN;
    if (apart && !row.details_digest) return changed;
    const expected = row.key_id ? this.keyring.rowHash(row.key_id, row, apart ? row.details_digest : null) : undefined;
    if (expected === undefined)
      return {
        seq: row.seq,
        reason: `row ${row.seq} is keyed with a key this service does not hold (key id ${row.key_id ?? 'none'}): set it in AUDIT_PREVIOUS_KEYS, or the row was forged`,
      };
    if (expected !== row.hash) return changed;
    if (apart && row.key_id) {
      const problem = this.detailsProblem(row, row.key_id);
      if (problem) return problem;
    }
    this.keyedFrom ??= row.seq;
    return null;
  }

  /** Version 3: details kept must match the digest the chain hashed; erased ones are a known gap. */
  private detailsProblem(row: ChainRow, keyId: string): ChainProblem | null {
    if (row.details_erased_at) {
      this.erasedDetails += 1;
      return null;
    }
    if (row.details === null || row.details === undefined)
      return { seq: row.seq, reason: `the details of row ${row.seq} are missing (deleted)` };
    return this.keyring.detailsDigest(keyId, row.details) === row.details_digest
      ? null
      : { seq: row.seq, reason: `the details of row ${row.seq} were changed after they were written` };
  }

  private anchorProblem(row: ChainRow): ChainProblem | null {
    const anchor = this.anchors.get(row.seq);
    if (!anchor || anchor.hash === row.hash) return null;
    return {
      seq: row.seq,
      reason: `row ${row.seq} is not the row anchored at ${anchor.anchored_at}: the chain was rebuilt`,
    };
  }

  finish(head: { seq: number; hash: string }): ChainProblem | null {
    if (this.problem) return this.problem;
    const last = this.expectedSeq - 1;
    const lastAnchored = Math.max(0, ...this.anchors.keys());
    if (head.seq > last)
      this.problem = {
        seq: last + 1,
        reason: `row${head.seq > last + 1 ? `s ${last + 1} to ${head.seq} are` : ` ${last + 1} is`} missing (deleted): the chain head is at ${head.seq}`,
      };
    else if (head.seq < last)
      this.problem = { seq: head.seq + 1, reason: `rows after ${head.seq} are not in the chain head` };
    else if (head.hash !== this.prevHash)
      this.problem = { seq: last, reason: `row ${last} does not match the chain head (it was changed or replaced)` };
    else if (lastAnchored > last)
      this.problem = {
        seq: last + 1,
        reason: `the chain ends at row ${last} but row ${lastAnchored} was anchored: rows were deleted`,
      };
    return this.problem;
  }
}
