import { describe, expect, it } from 'vitest';
import { ChainVerifier, GENESIS_HASH, rowHash, type ChainedContent } from '../src/domain/audit-chain.ts';

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

function verify(rows: (ChainedContent & { hash: string })[], head: { seq: number; hash: string }) {
  const v = new ChainVerifier();
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
