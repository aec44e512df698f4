import { useState } from 'preact/hooks';
import { ApiError, call, type Card, type Member } from '../api.ts';
import { Notice, PageTitle, money, points, problemText } from '../components/ui.tsx';

/**
 * Managers add or deduct points or cashback with a reason (required). The ledger refuses a
 * deduction the spendable balance does not cover; the form says so and nothing changes.
 */
export function AdjustmentsPage(props: { cards: Card[]; isManager: boolean; memberId?: number }) {
  const [member, setMember] = useState<Member>();
  const [lookup, setLookup] = useState(props.memberId ? String(props.memberId) : '');
  const [cardId, setCardId] = useState(props.cards[0]?.id);
  const [direction, setDirection] = useState<'add' | 'deduct'>('add');
  const [value, setValue] = useState('');
  const [reason, setReason] = useState('');
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const [busy, setBusy] = useState(false);
  const card = props.cards.find((c) => c.id === cardId);

  if (!props.isManager)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Adjust a balance</PageTitle>
        <Notice kind="error">Only managers can adjust balances. Your role is staff; ask a manager.</Notice>
      </main>
    );

  async function findMember(e: Event) {
    e.preventDefault();
    setOutcome(undefined);
    const v = lookup.trim();
    try {
      const r = await (/^\d+$/.test(v)
        ? call('staff.members.get', { params: { member_id: v } })
        : call('staff.members.find', { query: v.includes('@') ? { email: v } : { phone: v } }));
      setMember(r.member);
    } catch (err) {
      setMember(undefined);
      setOutcome({
        kind: 'error',
        text: err instanceof ApiError && err.code === 'member_not_found' ? 'No such member.' : problemText(err),
      });
    }
  }

  async function submit(e: Event) {
    e.preventDefault();
    if (!member || !card) return;
    setBusy(true);
    setOutcome(undefined);
    const isPoints = card.reward_system === 'points';
    try {
      const { adjustment: a } = await call('staff.adjustments.create', {
        body: {
          card_id: card.id,
          member_id: member.id,
          direction,
          ...(isPoints ? { points: Number(value) } : { amount: Number(value) }),
          reason: reason.trim(),
        },
      });
      const fmt = (n: number) => (isPoints ? points(n) : money(n, card.currency));
      setOutcome({
        kind: 'ok',
        text: `${a.direction === 'add' ? 'Added' : 'Deducted'} ${fmt((isPoints ? a.points : a.amount) ?? 0)} ${a.direction === 'add' ? 'to' : 'from'} ${member.name} on ${card.name}: ${fmt(a.previous_balance)} → ${fmt(a.new_balance)}.`,
      });
      setValue('');
      setReason('');
    } catch (err) {
      setOutcome({ kind: 'error', text: problemText(err) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Adjust a balance</PageTitle>
      <form class="filters" onSubmit={findMember}>
        <label>
          Member (number, email or phone)
          <input name="member" required value={lookup} onInput={(e) => setLookup(e.currentTarget.value)} />
        </label>
        <button type="submit">Find member</button>
      </form>
      {member && (
        <form class="stack narrow" onSubmit={submit}>
          <p>
            Member: <strong>{member.name}</strong> ({member.email ?? member.phone}) ·{' '}
            <a href={`#/members/${member.id}`}>open</a>
          </p>
          <label>
            Card
            <select name="card" value={cardId} onChange={(e) => setCardId(Number(e.currentTarget.value))}>
              {props.cards.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name} ({c.reward_system})
                </option>
              ))}
            </select>
          </label>
          <fieldset class="inline">
            <legend>Direction</legend>
            <label>
              <input type="radio" name="direction" checked={direction === 'add'} onChange={() => setDirection('add')} />{' '}
              Add
            </label>
            <label>
              <input
                type="radio"
                name="direction"
                checked={direction === 'deduct'}
                onChange={() => setDirection('deduct')}
              />{' '}
              Deduct
            </label>
          </fieldset>
          <label>
            {card?.reward_system === 'cashback' ? `Amount (${card.currency})` : 'Points'}
            <input
              name="value"
              type="number"
              inputMode="decimal"
              min={card?.reward_system === 'cashback' ? '0.01' : '1'}
              step={card?.reward_system === 'cashback' ? '0.01' : '1'}
              required
              value={value}
              onInput={(e) => setValue(e.currentTarget.value)}
            />
          </label>
          <label>
            Reason (required; the audit log keeps it)
            <textarea
              name="reason"
              required
              maxLength={500}
              rows={3}
              value={reason}
              onInput={(e) => setReason(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            {direction === 'add' ? 'Add' : 'Deduct'}
          </button>
        </form>
      )}
      <div aria-live="polite">{outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}</div>
    </main>
  );
}
