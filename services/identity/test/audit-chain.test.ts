import { describe, expect, it } from 'vitest';
import {
  anchorToken,
  AuditKeyring,
  ChainVerifier,
  GENESIS_HASH,
  parseAnchorToken,
  rowHash,
  type ChainedContent,
  type ChainRow,
  type SignedAnchor,
} from '../src/domain/audit-chain.ts';

const KEY = 'k'.repeat(32);
const ring = new AuditKeyring(KEY);

/** A chain of `n` rows as identity appends them. */
function chain(n: number): (ChainedContent & { hash: string })[] {
  const rows: (ChainedContent & { hash: string })[] = [];
  let prev = GENESIS_HASH;
  for (let seq = 1; seq <= n; seq++) {
    const content: ChainedContent = {
      tenant_id: 7,
      seq,
      event_id: `e${seq}`,
      service: 'ledger',
      occurred_at: `2026-03-14T09:00:0${seq % 10}.000Z`,
      actor: { type: 'staff', id: 3, email: 'maria@example.com', role: 'manager' },
      action: 'balance.adjusted',
      target: { member_id: 42, card_id: 2 },
      amounts: { points: seq * 10 },
      details: { reason: `reason ${seq}` },
      request_id: `r${seq}`,
      prev_hash: prev,
    };
    const hash = rowHash(content);
    rows.push({ ...content, hash });
    prev = hash;
  }
  return rows;
}

function verify(rows: ChainRow[], head: { seq: number; hash: string }, keyring = ring, anchors = new Map()) {
  const v = new ChainVerifier(keyring, anchors);
  for (const r of rows) v.add(r);
  return { problem: v.finish(head), checked: v.checked };
}

const headOf = (rows: { seq: number; hash: string }[]) => ({ seq: rows.at(-1)!.seq, hash: rows.at(-1)!.hash });

describe('audit hash chain', () => {
  it('hashes canonically: key order does not matter, every field does', () => {
    const [row] = chain(1);
    const { hash: _h, ...content } = row!;
    const reordered = Object.fromEntries(Object.entries(content).reverse()) as unknown as ChainedContent;
    expect(rowHash(reordered)).toBe(row!.hash);
    for (const [key, value] of Object.entries({
      amounts: { points: 11 },
      action: 'x',
      prev_hash: 'f'.repeat(64),
      seq: 2,
    }))
      expect(rowHash({ ...content, [key]: value } as ChainedContent)).not.toBe(row!.hash);
  });

  it('accepts an intact chain and an empty one', () => {
    const rows = chain(5);
    expect(verify(rows, headOf(rows))).toEqual({ problem: null, checked: 5 });
    expect(verify([], { seq: 0, hash: GENESIS_HASH })).toEqual({ problem: null, checked: 0 });
  });

  it('names an edited row, and the next one when the edit recomputed the hash', () => {
    const rows = chain(5);
    rows[2] = { ...rows[2]!, amounts: { points: 1_000_000 } };
    expect(verify(rows, headOf(chain(5))).problem).toEqual({
      seq: 3,
      reason: expect.stringMatching(/row 3 was changed/),
    });
    const forged = chain(5);
    const { hash: _h, ...content } = { ...forged[2]!, amounts: { points: 1_000_000 } };
    forged[2] = { ...content, hash: rowHash(content) };
    expect(verify(forged, headOf(chain(5))).problem).toEqual({
      seq: 4,
      reason: expect.stringMatching(/row 4 does not link to row 3/),
    });
  });

  it('names a deleted row, several deleted rows, and deleted last rows against the head', () => {
    const rows = chain(6);
    const head = headOf(rows);
    expect(
      verify(
        rows.filter((r) => r.seq !== 4),
        head,
      ).problem,
    ).toEqual({
      seq: 4,
      reason: 'row 4 is missing (deleted)',
    });
    expect(
      verify(
        rows.filter((r) => r.seq !== 2 && r.seq !== 3),
        head,
      ).problem?.reason,
    ).toBe('rows 2 to 3 are missing (deleted)');
    expect(verify(rows.slice(0, 5), head).problem).toEqual({
      seq: 6,
      reason: 'row 6 is missing (deleted): the chain head is at 6',
    });
    expect(verify(rows.slice(0, 3), head).problem?.reason).toBe(
      'rows 4 to 6 are missing (deleted): the chain head is at 6',
    );
    expect(verify([], head).problem?.seq).toBe(1);
  });

  it('names a last row replaced together with its links', () => {
    const rows = chain(4);
    const head = headOf(rows);
    const { hash: _h, ...content } = { ...rows[3]!, details: { reason: 'forged' } };
    rows[3] = { ...content, hash: rowHash(content) };
    expect(verify(rows, head).problem).toEqual({
      seq: 4,
      reason: expect.stringMatching(/does not match the chain head/),
    });
  });
});

/** A chain of `n` rows as the keyed identity appends them (after `legacy` rows of the earlier form). */
function keyedChain(n: number, keyring = ring, legacy = 0): ChainRow[] {
  const rows: ChainRow[] = chain(legacy);
  let prev = rows.at(-1)?.hash ?? GENESIS_HASH;
  for (let seq = legacy + 1; seq <= legacy + n; seq++) {
    const { hash: _h, ...base } = chain(1)[0]!;
    const plain: ChainedContent = { ...base, seq, event_id: `k${seq}`, prev_hash: prev };
    const sealed = keyring.seal(plain);
    rows.push({ ...plain, ...sealed });
    prev = sealed.hash;
  }
  return rows;
}

describe('keyed audit chain', () => {
  it('verifies keyed rows, and legacy rows before them, reporting where keying starts', () => {
    const v = new ChainVerifier(ring);
    const rows = keyedChain(3, ring, 2);
    for (const r of rows) v.add(r);
    expect(v.finish(headOf(rows))).toBeNull();
    expect({ legacy: v.legacyRows, keyedFrom: v.keyedFrom, checked: v.checked }).toEqual({
      legacy: 2,
      keyedFrom: 3,
      checked: 5,
    });
  });

  it('detects a keyed row whose hash was recomputed with the public algorithm', () => {
    const rows = keyedChain(3);
    const { hash: _h, ...content } = { ...rows[1]!, amounts: { points: 1 } };
    rows[1] = { ...content, hash: rowHash(content) };
    expect(verify(rows, headOf(rows)).problem).toEqual({ seq: 2, reason: expect.stringMatching(/row 2 was changed/) });
  });

  it('detects a row made unkeyed after keyed ones (a rebuild with the public algorithm)', () => {
    const rows = keyedChain(3);
    const { hash: _h, chain_version: _v, key_id: _k, ...content } = rows[2]!;
    rows[2] = { ...content, hash: rowHash(content), chain_version: 1, key_id: null };
    expect(verify(rows, headOf(rows)).problem?.reason).toMatch(/row 3 is unkeyed .* after keyed rows/);
  });

  it('needs the key: another key does not verify, a retired key in the ring does (rotation)', () => {
    const old = 'o'.repeat(32);
    const rows = keyedChain(2, new AuditKeyring(old));
    expect(verify(rows, headOf(rows)).problem?.reason).toMatch(
      /key this service does not hold \(key id [0-9a-f]{16}\)/,
    );
    expect(verify(rows, headOf(rows), new AuditKeyring(KEY, [old])).problem).toBeNull();
    // Keys are named by a fingerprint, never by themselves.
    expect(rows[0]!.key_id).toBe(AuditKeyring.keyId(old));
    expect(rows[0]!.key_id).not.toContain('ooo');
  });

  it('checks rows against signed anchors, and a chain that ends before an anchor', () => {
    const rows = keyedChain(4);
    const anchorOf = (seq: number, hash: string): SignedAnchor => {
      const content = { tenant_id: 7, seq, hash, anchored_at: '2026-03-14T10:00:00.000Z' };
      return { ...content, key_id: ring.currentId, signature: ring.anchorSignature(content)! };
    };
    expect(verify(rows, headOf(rows), ring, new Map([[3, anchorOf(3, rows[2]!.hash)]])).problem).toBeNull();
    expect(verify(rows, headOf(rows), ring, new Map([[3, anchorOf(3, 'f'.repeat(64))]])).problem).toEqual({
      seq: 3,
      reason: 'row 3 is not the row anchored at 2026-03-14T10:00:00.000Z: the chain was rebuilt',
    });
    const short = rows.slice(0, 2);
    expect(verify(short, headOf(short), ring, new Map([[4, anchorOf(4, rows[3]!.hash)]])).problem?.reason).toBe(
      'the chain ends at row 2 but row 4 was anchored: rows were deleted',
    );
  });

  it('signs anchors so that any change, another key or another tenant does not verify; tokens round-trip', () => {
    const content = { tenant_id: 7, seq: 12, hash: 'a'.repeat(64), anchored_at: '2026-03-14T10:00:00.123Z' };
    const anchor: SignedAnchor = { ...content, key_id: ring.currentId, signature: ring.anchorSignature(content)! };
    expect(ring.anchorSigned(anchor)).toBe(true);
    for (const changed of [
      { ...anchor, seq: 13 },
      { ...anchor, tenant_id: 8 },
      { ...anchor, hash: 'b'.repeat(64) },
      { ...anchor, anchored_at: '2026-03-14T10:00:00.124Z' },
      { ...anchor, signature: 'nothex' },
    ])
      expect(ring.anchorSigned(changed)).toBe(false);
    expect(new AuditKeyring('x'.repeat(32)).anchorSigned(anchor)).toBe(false);
    // The anchor signature is not the row hash of the same key (keys derived per purpose).
    expect(anchor.signature).not.toBe(ring.rowHash(ring.currentId, { ...chain(1)[0]!, prev_hash: anchor.hash }));
    const token = anchorToken(anchor);
    expect(token).toMatch(/^v1\.7\.12\.a{64}\.\d+\.[0-9a-f]{16}\.[0-9a-f]{64}$/);
    expect(parseAnchorToken(token)).toEqual(anchor);
    expect(parseAnchorToken(token.replace('v1.', 'v2.'))).toBeUndefined();
  });
});

/** A chain of `n` rows of version 3, as identity appends them now: details beside, their digest hashed. */
function detailsApartChain(n: number): ChainRow[] {
  const rows: ChainRow[] = [];
  let prev = GENESIS_HASH;
  for (const plain of chain(n)) {
    const { hash: _h, ...content } = plain;
    const row = { ...content, prev_hash: prev };
    const sealed = ring.seal(row);
    rows.push({ ...row, ...sealed, details_erased_at: null });
    prev = sealed.hash;
  }
  return rows;
}

describe('audit chain version 3 (details beside the chain)', () => {
  it('verifies, and still verifies once a row’s details are erased (counted)', () => {
    const rows = detailsApartChain(4);
    expect(rows.every((r) => r.chain_version === 3 && /^[0-9a-f]{64}$/.test(r.details_digest ?? ''))).toBe(true);
    expect(verify(rows, headOf(rows)).problem).toBeNull();
    const erased = rows.map((r) =>
      r.seq === 2 ? { ...r, details: null, details_erased_at: '2026-11-26T00:00:00.000Z' } : r,
    );
    const v = new ChainVerifier(ring);
    for (const r of erased) v.add(r);
    expect(v.finish(headOf(erased))).toBeNull();
    expect(v.erasedDetails).toBe(1);
  });

  it('finds details changed or deleted, and a digest or any hashed field changed', () => {
    const rows = detailsApartChain(3);
    const changed = rows.map((r) => (r.seq === 2 ? { ...r, details: { reason: 'something else' } } : r));
    expect(verify(changed, headOf(changed)).problem).toEqual({
      seq: 2,
      reason: 'the details of row 2 were changed after they were written',
    });
    const deleted = rows.map((r) => (r.seq === 2 ? { ...r, details: null } : r));
    expect(verify(deleted, headOf(deleted)).problem?.reason).toBe('the details of row 2 are missing (deleted)');
    const digest = rows.map((r) => (r.seq === 2 ? { ...r, details_digest: 'a'.repeat(64) } : r));
    expect(verify(digest, headOf(digest)).problem?.reason).toMatch(/row 2 was changed/);
    const amounts = rows.map((r) => (r.seq === 3 ? { ...r, amounts: { points: 1 } } : r));
    expect(verify(amounts, headOf(amounts)).problem?.reason).toMatch(/row 3 was changed/);
    // Marking a row as version 2 (as if its details were hashed) does not verify either.
    const downgraded = rows.map((r) => (r.seq === 1 ? { ...r, chain_version: 2 } : r));
    expect(verify(downgraded, headOf(downgraded)).problem?.seq).toBe(1);
  });

  it('hashes a keyed digest of the details, not the details: other details give another digest, and so another hash', () => {
    const [row] = detailsApartChain(1);
    const other = ring.seal({ ...row!, details: { reason: 'Goodwill for Erin' } });
    expect(other.hash).not.toBe(row!.hash);
    expect(other.details_digest).not.toBe(row!.details_digest);
    expect(ring.detailsDigest(ring.currentId, row!.details)).toBe(row!.details_digest);
  });
});
