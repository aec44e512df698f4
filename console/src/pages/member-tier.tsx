import { useState } from 'preact/hooks';
import { ApiError, call, type Answer, type Card } from '../api.ts';
import { Notice, money, points, problemText, useLoad } from '../components/ui.tsx';

type MemberTier = Answer<'staff.tiers.member'>;

/** An amount in what a card's tiers count: points (points earned on a points card) or money. */
export function tierAmount(n: number, metric: string, card: Card): string {
  return metric === 'points_earned' && card.reward_system === 'points' ? points(n) : money(n, card.currency);
}

/** A day of a date input (YYYY-MM-DD) in the browser's time zone. */
const dayOf = (d: Date) =>
  `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;

/**
 * The member's tier on each card that has tiers: the tier, until when it holds, what the window
 * counted so far and a progress bar towards the next tier ("120 points to Gold"). Managers set a
 * tier by hand below it; the line shows the ledger's answer at once.
 */
export function TierSection(props: { memberId: number; cards: Card[]; isManager: boolean }) {
  const tierOn = async (card: Card): Promise<{ card: Card; tier?: MemberTier }> => {
    try {
      return {
        card,
        tier: await call('staff.tiers.member', { params: { card_id: card.id, member_id: props.memberId } }),
      };
    } catch (err) {
      // A card without tiers has nothing to show; anything else is a failure.
      if (err instanceof ApiError && err.code === 'tiers_not_configured') return { card };
      throw err;
    }
  };
  const tiers = useLoad(() => Promise.all(props.cards.map(tierOn)), [props.memberId]);
  /** What setting a tier by hand answered, by card: newer than what the page loaded. */
  const [setHere, setSetHere] = useState<Record<number, MemberTier>>({});
  const shown = (tiers.data ?? [])
    .filter((t): t is { card: Card; tier: MemberTier } => t.tier !== undefined)
    .map((t) => ({ card: t.card, tier: setHere[t.card.id] ?? t.tier }));
  if (tiers.data && shown.length === 0) return null;
  return (
    <section aria-labelledby="tiers-h">
      <h2 id="tiers-h">Tiers</h2>
      {tiers.error !== undefined && <Notice kind="error">{problemText(tiers.error)}</Notice>}
      <ul class="plain tiers">
        {shown.map(({ card, tier }) => (
          <TierLine key={card.id} card={card} t={tier} />
        ))}
      </ul>
      {props.isManager && shown.length > 0 && (
        <ManualTierForm
          memberId={props.memberId}
          cards={shown.map((s) => s.card)}
          onSet={(cardId, tier) => setSetHere((was) => ({ ...was, [cardId]: tier }))}
        />
      )}
    </section>
  );
}

function TierLine(props: { card: Card; t: MemberTier }) {
  const { card, t } = props;
  const next = t.next_tier;
  const amount = (n: number) => tierAmount(n, t.metric, card);
  return (
    <li data-testid={`tier-${card.id}`}>
      <strong>{card.name}</strong>: <span class="badge badge-tier">{t.tier.name}</span>{' '}
      <span class="muted">
        {t.valid_until ? `valid until ${new Date(t.valid_until).toLocaleDateString()}` : 'no end date'}
        {t.manual ? ` · set by hand: ${t.manual.reason}` : ''}
      </span>
      <div>
        {amount(t.qualifying_total)} counted
        {t.window_start ? ` since ${t.window_start}` : ''}
      </div>
      {next && t.needed_for_next !== null ? (
        <div class="progress">
          <progress
            max={next.entry_threshold}
            value={Math.min(t.qualifying_total, next.entry_threshold)}
            aria-label={`Progress to ${next.name}`}
          />
          <span data-testid={`tier-next-${card.id}`}>
            {amount(t.needed_for_next)} to {next.name}
          </span>
        </div>
      ) : (
        <div>Highest tier.</div>
      )}
      {t.needed_to_retain !== null && t.needed_to_retain > 0 && (
        <div class="muted">
          {amount(t.needed_to_retain)} more to keep {t.tier.name} at its review.
        </div>
      )}
    </li>
  );
}

/**
 * A manager sets the member's tier on a card by hand (a goodwill upgrade, a correction): a tier of
 * the card's ladder, the day it is reviewed like any other (the end of that day in the browser's
 * time zone) and a reason, audited by the ledger. The outcome is announced; a refusal shows the
 * server's message.
 */
function ManualTierForm(props: { memberId: number; cards: Card[]; onSet: (cardId: number, tier: MemberTier) => void }) {
  const [cardId, setCardId] = useState(props.cards[0]?.id ?? 0);
  const ladder = useLoad(() => call('staff.tiers.get', { params: { card_id: cardId } }), [cardId]);
  const [tier, setTier] = useState('');
  const [until, setUntil] = useState('');
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const card = props.cards.find((c) => c.id === cardId);

  async function save(e: Event) {
    e.preventDefault();
    setOutcome(undefined);
    setBusy(true);
    try {
      const answer = await call('staff.tiers.set', {
        params: { card_id: cardId, member_id: props.memberId },
        body: { tier, valid_until: new Date(`${until}T23:59:59.999`).toISOString(), reason: reason.trim() },
      });
      props.onSet(cardId, answer);
      const ends = answer.valid_until ? ` until ${new Date(answer.valid_until).toLocaleDateString()}` : '';
      setOutcome({ kind: 'ok', text: `Set to ${answer.tier.name} on ${card?.name ?? 'the card'}${ends}.` });
      setReason('');
    } catch (err) {
      setOutcome({ kind: 'error', text: problemText(err) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <h3 id="tier-set-h">Set a tier by hand</h3>
      <form class="filters" onSubmit={save} aria-labelledby="tier-set-h">
        <label>
          Card with tiers
          <select
            name="tier-card"
            value={cardId}
            onChange={(e) => (setTier(''), setCardId(Number(e.currentTarget.value)))}
          >
            {props.cards.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          New tier
          <select name="tier" required value={tier} onChange={(e) => setTier(e.currentTarget.value)}>
            <option value="">Choose a tier</option>
            {(ladder.data?.tiers ?? []).map((t) => (
              <option key={t.rank} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Valid until
          <input
            name="tier-valid-until"
            type="date"
            required
            min={dayOf(new Date())}
            value={until}
            onInput={(e) => setUntil(e.currentTarget.value)}
          />
        </label>
        <label>
          Reason
          <input
            name="tier-reason"
            required
            maxLength={500}
            value={reason}
            onInput={(e) => setReason(e.currentTarget.value)}
          />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Set tier
        </button>
      </form>
      {ladder.error !== undefined && <Notice kind="error">{problemText(ladder.error)}</Notice>}
      {outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
    </>
  );
}
