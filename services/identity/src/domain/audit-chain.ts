import { createHash } from 'node:crypto';
import { stableStringify } from '@loyalty/runtime';

/** The `prev_hash` of a tenant's first row. */
export const GENESIS_HASH = '0'.repeat(64);

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

/** SHA-256 (hex) of the row's content in a canonical form (sorted keys), which includes prev_hash. */
export function rowHash(row: ChainedContent): string {
  const content: ChainedContent = {
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
  };
  return createHash('sha256').update(stableStringify(content)).digest('hex');
}

export interface ChainProblem {
  seq: number;
  reason: string;
}

/**
 * Checks a tenant's rows in sequence order, page by page: each row must be the next number, link
 * to the hash of the row before it, and hash to its stored hash. `finish` compares the last row
 * with the head identity keeps, so a deleted last row shows too. The first problem is kept.
 */
export class ChainVerifier {
  private expectedSeq = 1;
  private prevHash = GENESIS_HASH;
  problem: ChainProblem | null = null;
  checked = 0;

  add(row: ChainedContent & { hash: string }): void {
    if (this.problem) return;
    this.checked += 1;
    if (row.seq !== this.expectedSeq) {
      this.problem =
        row.seq > this.expectedSeq
          ? {
              seq: this.expectedSeq,
              reason:
                row.seq - 1 > this.expectedSeq
                  ? `rows ${this.expectedSeq} to ${row.seq - 1} are missing (deleted)`
                  : `row ${this.expectedSeq} is missing (deleted)`,
            }
          : { seq: row.seq, reason: `row ${row.seq} is out of sequence` };
      return;
    }
    if (row.prev_hash !== this.prevHash) {
      this.problem = {
        seq: row.seq,
        reason: `row ${row.seq} does not link to row ${row.seq - 1}: the row before it was changed or replaced`,
      };
      return;
    }
    if (rowHash(row) !== row.hash) {
      this.problem = {
        seq: row.seq,
        reason: `row ${row.seq} was changed after it was written (its hash does not match)`,
      };
      return;
    }
    this.prevHash = row.hash;
    this.expectedSeq += 1;
  }

  finish(head: { seq: number; hash: string }): ChainProblem | null {
    if (this.problem) return this.problem;
    const last = this.expectedSeq - 1;
    if (head.seq > last)
      this.problem = {
        seq: last + 1,
        reason: `row${head.seq > last + 1 ? `s ${last + 1} to ${head.seq} are` : ` ${last + 1} is`} missing (deleted): the chain head is at ${head.seq}`,
      };
    else if (head.seq < last)
      this.problem = { seq: head.seq + 1, reason: `rows after ${head.seq} are not in the chain head` };
    else if (head.hash !== this.prevHash)
      this.problem = { seq: last, reason: `row ${last} does not match the chain head (it was changed or replaced)` };
    return this.problem;
  }
}
