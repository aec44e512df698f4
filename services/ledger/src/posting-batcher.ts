import DataLoader from 'dataloader';
import { isConnectionLost } from '@loyalty/runtime';
import type { Posting, PostedEntry } from './store/accounts.ts';

/** One posting statement outside a transaction (store/accounts.ts `postMany` on the pool). */
export type PostingStatement = (
  direction: 'credit' | 'debit',
  postings: Posting[],
) => Promise<(PostedEntry | undefined)[]>;

/**
 * Group commit for the postings that need no transaction of their own (earns and redemptions
 * without an Idempotency-Key). While `statements` posting statements are in flight, postings queue
 * up; the next statement takes all of them (up to `maxBatch`), so under load one round trip and one
 * commit serve many requests, and with nothing in flight a posting goes alone at once (its effect
 * on a points earn's database work is measured in bench/README.md).
 *
 * Each posting keeps its own outcome: an account appears once per statement (a second posting on
 * it waits for the next one), and a statement refused as a whole by a data error (a duplicate earn
 * reference, say) is retried posting by posting, so one bad posting never fails the others.
 */
export class PostingBatcher {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly observe: ((postings: number) => void) | undefined;
  private readonly loaders: Record<'credit' | 'debit', DataLoader<Posting, PostedEntry | undefined>>;

  constructor(
    private readonly statement: PostingStatement,
    opts: { statements: number; maxBatch: number; observe?: (postings: number) => void },
  ) {
    this.observe = opts.observe;
    const schedule = (dispatch: () => void) => {
      if (this.inFlight < opts.statements) {
        this.inFlight++;
        setImmediate(dispatch); // postings of this event-loop turn join the batch
      } else {
        this.waiting.push(dispatch);
      }
    };
    const loader = (direction: 'credit' | 'debit') =>
      new DataLoader<Posting, PostedEntry | undefined>((batch) => this.run(direction, [...batch]), {
        cache: false,
        batchScheduleFn: schedule,
        maxBatchSize: opts.maxBatch,
      });
    this.loaders = { credit: loader('credit'), debit: loader('debit') };
  }

  /** Post outside any transaction; undefined: a debit the balance did not cover. */
  post(direction: 'credit' | 'debit', posting: Posting): Promise<PostedEntry | undefined> {
    return this.loaders[direction].load(posting);
  }

  private async run(direction: 'credit' | 'debit', batch: Posting[]): Promise<(PostedEntry | undefined | Error)[]> {
    try {
      const results: (PostedEntry | undefined | Error)[] = new Array(batch.length);
      for (const round of onePerAccount(batch)) {
        const posted = await this.postRound(
          direction,
          round.map((i) => at(batch, i)),
        );
        round.forEach((i, j) => (results[i] = posted[j]));
      }
      return results;
    } finally {
      // Hand the statement's slot to the batch that waited longest.
      const next = this.waiting.shift();
      if (next) next();
      else this.inFlight--;
    }
  }

  private async postRound(
    direction: 'credit' | 'debit',
    postings: Posting[],
  ): Promise<(PostedEntry | undefined | Error)[]> {
    this.observe?.(postings.length);
    try {
      return await this.statement(direction, postings);
    } catch (err) {
      const failure = err instanceof Error ? err : new Error(String(err));
      if (postings.length === 1 || isConnectionLost(err)) return postings.map(() => failure);
      return Promise.all(
        postings.map((p) =>
          this.statement(direction, [p]).then(
            (r) => r[0],
            (e: Error) => e,
          ),
        ),
      );
    }
  }
}

/**
 * Positions of `batch` split into rounds in which every account appears once (usually one round),
 * each round in account order: statements then lock account rows in one global order, so two
 * statements in flight never deadlock on each other.
 */
function onePerAccount(batch: Posting[]): number[][] {
  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  batch.forEach((p, i) => {
    const key = `${p.account.cardId}:${p.account.memberId}`;
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (rounds[round] ??= []).push(i);
  });
  const byAccount = (a: number, b: number) => {
    const x = at(batch, a).account;
    const y = at(batch, b).account;
    return x.cardId - y.cardId || x.memberId - y.memberId;
  };
  return rounds.map((round) => round.sort(byAccount));
}

/** The element at a position the caller computed from the array itself. */
function at<T>(items: readonly T[], i: number): T {
  const item = items[i];
  if (item === undefined) throw new RangeError(`no posting at ${i}`);
  return item;
}
