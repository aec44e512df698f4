import { ReplicaCache, type Metrics, type NatsConnection, type Queryable } from '@loyalty/runtime';
import { compileRule, type CompiledRule } from './domain/rules/index.ts';
import { findCard, type Card } from './store/cards.ts';
import { listRules } from './store/rules.ts';
import { findLadder } from './store/tiers.ts';
import type { TierLadder } from './domain/tiers.ts';

/** A card with its active earning rules, compiled for its unit, and its tiers (both ride in the card cache). */
export interface RuledCard extends Card {
  rules: CompiledRule[];
  /** The card's tier ladder; null: the card has no tiers. */
  tiers: TierLadder | null;
}

/** The card, its active rules and its tiers (three reads, on a cache miss only). */
async function loadCard(db: Queryable, tenantId: number, cardId: number): Promise<RuledCard | undefined> {
  const card = await findCard(db, tenantId, cardId);
  if (!card) return undefined;
  const rows = await listRules(db, card.tenant_id, card.id, ['active']);
  const ladder = await findLadder(db, card.id);
  return {
    ...card,
    rules: rows.map((r) => compileRule(r, r.definition, card.reward_system)),
    tiers: ladder && ladder.steps.length > 0 ? ladder : null,
  };
}

/** The card a card-changed broadcast (`{ card_id }`) names; a malformed one names none. */
const changedCard = (m: unknown): number[] =>
  typeof m === 'object' && m !== null && 'card_id' in m && typeof m.card_id === 'number' ? [m.card_id] : [];

/**
 * Cards as the money operations read them, kept for a short time: every earn, redemption and
 * read names a card, and its settings change rarely (operator API). The replica that changes a
 * card forgets it at once and broadcasts the change (`changed`), so every other replica forgets it
 * too; a replica whose NATS connection drops forgets every card (it may have missed broadcasts),
 * and a read that raced a change is not kept. The TTL bounds what a broadcast lost otherwise
 * could leave in use. Only cards that exist are kept: a card created a moment ago is never
 * hidden by a cached miss. A card comes with its active earning rules, so an earn needs no other
 * read to know them; a rule change is a card change (forgotten and broadcast the same way).
 */
export class CardCache {
  readonly cache: ReplicaCache<number, RuledCard>;

  constructor(
    private readonly db: Queryable,
    opts: { ttlMs: number; maxEntries?: number; nc?: NatsConnection; subject?: string; metrics?: Metrics },
  ) {
    this.cache = new ReplicaCache<number, RuledCard>({
      name: 'ledger-cards',
      ttlMs: opts.ttlMs,
      maxEntries: opts.maxEntries ?? 10_000,
      metrics: opts.metrics,
      nc: opts.nc,
      broadcast: opts.subject === undefined ? undefined : { subject: opts.subject, forgets: changedCard },
    });
  }

  /** The tenant's card, or undefined (also for another tenant's card). */
  async get(tenantId: number, cardId: number): Promise<RuledCard | undefined> {
    const card = await this.cache.load(cardId, () => loadCard(this.db, tenantId, cardId));
    return card?.tenant_id === tenantId ? card : undefined;
  }

  forget(cardId: number): void {
    this.cache.forget(cardId);
  }

  /** A card's settings changed here: forget it on this replica at once and on every other one. */
  changed(cardId: number): void {
    this.cache.announce({ card_id: cardId });
  }
}
