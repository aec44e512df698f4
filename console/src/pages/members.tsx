import { useState } from 'preact/hooks';
import { ApiError, call, type Balance, type Card } from '../api.ts';
import { Notice, PageTitle, Pager, money, points, problemText, useLoad, when } from '../components/ui.tsx';
import { TierSection } from './member-tier.tsx';

/** Member look-up by email or phone; the member's page opens at #/members/<id>. */
export function MemberSearch() {
  const [by, setBy] = useState<'email' | 'phone'>('email');
  const [value, setValue] = useState('');
  const [error, setError] = useState<string>();

  async function find(e: Event) {
    e.preventDefault();
    setError(undefined);
    try {
      const v = value.trim();
      const r = await call('staff.members.find', { query: by === 'email' ? { email: v } : { phone: v } });
      location.hash = `#/members/${r.member.id}`;
    } catch (err) {
      setError(
        err instanceof ApiError && err.code === 'member_not_found' ? `No member with this ${by}.` : problemText(err),
      );
    }
  }

  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Find a member</PageTitle>
      <form class="filters" onSubmit={find}>
        <fieldset class="inline">
          <legend>Search by</legend>
          <label>
            <input type="radio" name="by" checked={by === 'email'} onChange={() => setBy('email')} /> Email
          </label>
          <label>
            <input type="radio" name="by" checked={by === 'phone'} onChange={() => setBy('phone')} /> Phone
          </label>
        </fieldset>
        <label>
          {by === 'email' ? 'Email' : 'Phone'}
          {by === 'email' ? (
            <input name="member" type="email" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
          ) : (
            <input name="member" type="tel" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
          )}
        </label>
        <button type="submit" class="primary">
          Find
        </button>
      </form>
      {error && <Notice kind="error">{error}</Notice>}
    </main>
  );
}

function BalanceCell(props: { b: Balance }) {
  const { b } = props;
  const pts = b.reward_system === 'points';
  const fmt = (n: number | undefined) => (n === undefined ? undefined : pts ? points(n) : money(n, b.currency));
  const pending = fmt(pts ? b.pending_points : b.pending_cashback);
  const held = fmt(pts ? b.held_points : b.held_cashback);
  return (
    <>
      <strong data-testid={`balance-${b.card_id}`}>{fmt(pts ? b.points_balance : b.cashback_balance)}</strong>
      {pending !== undefined && <div class="muted">Pending: {pending}</div>}
      {held !== undefined && <div class="muted">Held for claims: {held}</div>}
      {b.next_expiries && b.next_expiries.length > 0 && (
        <div class="muted">
          Expiring:{' '}
          {b.next_expiries
            .map((x) => `${fmt(pts ? x.points : x.amount)} on ${new Date(x.expires_at).toLocaleDateString()}`)
            .join(', ')}
        </div>
      )}
    </>
  );
}

/** A member: balances per card (pending, held and expiring amounts when the ledger reports them), history, referrals. */
export function MemberPage(props: { memberId: number; cards: Card[]; isManager: boolean }) {
  const { memberId, cards } = props;
  const params = { member_id: memberId };
  const member = useLoad(() => call('staff.members.get', { params }), [memberId]);
  const balances = useLoad(() => call('staff.members.balances', { params }), [memberId]);
  const [cardId, setCardId] = useState<number | undefined>(cards[0]?.id);
  const [offset, setOffset] = useState(0);
  const card = cards.find((c) => c.id === cardId);
  const history = useLoad(
    () =>
      cardId === undefined
        ? Promise.resolve(undefined)
        : call('staff.members.history', { params, query: { card_id: cardId, limit: 10, offset } }),
    [memberId, cardId, offset],
  );
  const pointsCards = cards.filter((c) => c.reward_system === 'points');
  const [refCard, setRefCard] = useState<number | undefined>(pointsCards[0]?.id);
  const referrals = useLoad(
    () =>
      refCard === undefined
        ? Promise.resolve(undefined)
        : call('staff.members.referrals', { params, query: { card_id: refCard } }),
    [memberId, refCard],
  );

  if (member.error !== undefined)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Member</PageTitle>
        <Notice kind="error">{problemText(member.error)}</Notice>
      </main>
    );
  const m = member.data?.member;
  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>{m ? m.name : 'Member'}</PageTitle>
      {m && (
        <dl class="facts">
          <dt>Member number</dt>
          <dd>{m.id}</dd>
          <dt>Email</dt>
          <dd>{m.email ?? '—'}</dd>
          <dt>Phone</dt>
          <dd>{m.phone ?? '—'}</dd>
          <dt>Member since</dt>
          <dd>{when(m.created_at)}</dd>
          <dt>Status</dt>
          <dd>{m.is_active ? 'active' : 'inactive'}</dd>
        </dl>
      )}
      {props.isManager && m && (
        <p>
          <a class="button" href={`#/adjust?member=${m.id}`}>
            Adjust a balance
          </a>
        </p>
      )}
      {props.isManager && m && <MergeForm memberId={m.id} />}

      {m && <TierSection memberId={m.id} cards={cards} isManager={props.isManager} />}

      <section aria-labelledby="balances-h">
        <h2 id="balances-h">Balances</h2>
        {balances.error !== undefined && <Notice kind="error">{problemText(balances.error)}</Notice>}
        {balances.data && (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Card</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Spendable</th>
                </tr>
              </thead>
              <tbody>
                {balances.data.balances.map((b) => (
                  <tr key={b.card_id}>
                    <th scope="row">{b.card_name}</th>
                    <td>{b.reward_system}</td>
                    <td>
                      <BalanceCell b={b} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <label>
          Card
          <select
            value={cardId}
            onChange={(e) => (setOffset(0), setCardId(Number(e.currentTarget.value)))}
            name="history-card"
          >
            {cards.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
        {history.error !== undefined && <Notice kind="error">{problemText(history.error)}</Notice>}
        {history.data && card && (
          <>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Event</th>
                    <th scope="col" class="num">
                      {card.reward_system === 'points' ? 'Points' : 'Amount'}
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {history.data.transactions.length === 0 && (
                    <tr>
                      <td colSpan={3}>No transactions on this card.</td>
                    </tr>
                  )}
                  {history.data.transactions.map((t) => (
                    <tr key={t.id}>
                      <td>{when(t.created_at)}</td>
                      <td>{t.event.replace(/_/g, ' ')}</td>
                      <td class="num">{card.reward_system === 'points' ? t.points : money(t.amount, card.currency)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={history.data.pagination} onPage={setOffset} label="History pages" />
          </>
        )}
      </section>

      {m && <ConsentSection memberId={m.id} isManager={props.isManager} />}

      <section aria-labelledby="referrals-h">
        <h2 id="referrals-h">Referrals</h2>
        {pointsCards.length === 0 ? (
          <p>Referrals run on points cards; this merchant has none.</p>
        ) : (
          <>
            <label>
              Card
              <select value={refCard} onChange={(e) => setRefCard(Number(e.currentTarget.value))}>
                {pointsCards.map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.name}
                  </option>
                ))}
              </select>
            </label>
            {referrals.error !== undefined && <Notice kind="error">{problemText(referrals.error)}</Notice>}
            {referrals.data && (
              <>
                <p>
                  Referral code:{' '}
                  <strong data-testid="referral-code">{referrals.data.referral_code ?? 'none yet'}</strong>
                </p>
                {referrals.data.total === 0 ? (
                  <p>No referrals yet.</p>
                ) : (
                  <ul class="plain">
                    {referrals.data.referrals.map((r) => (
                      <li key={r.id}>
                        {r.referee_name}, {r.status}, {points(r.bonus_points)} bonus, {when(r.created_at)}
                      </li>
                    ))}
                  </ul>
                )}
              </>
            )}
          </>
        )}
      </section>
    </main>
  );
}

/**
 * A manager merges a duplicate member into this one (the member known by email at the till and by
 * phone online): the duplicate's balances, holds, pending claims and referrals move here, and the
 * duplicate stops existing. It runs as a job; the page shows that it started.
 */
function MergeForm(props: { memberId: number }) {
  const [source, setSource] = useState('');
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();

  async function merge(e: Event) {
    e.preventDefault();
    setOutcome(undefined);
    try {
      const job = await call('staff.members.merge', {
        params: { member_id: props.memberId },
        body: { source_member_id: Number(source) },
      });
      setOutcome({
        kind: 'ok',
        text: `Merging member ${source} into this member (job ${job.id}, ${job.status}). Reload to see the balances.`,
      });
      setSource('');
    } catch (err) {
      setOutcome({ kind: 'error', text: problemText(err) });
    }
  }

  return (
    <section aria-labelledby="merge-h">
      <h2 id="merge-h">Merge a duplicate</h2>
      <form class="filters" onSubmit={merge}>
        <label>
          Duplicate's member number
          <input
            name="source-member"
            inputMode="numeric"
            pattern="[0-9]+"
            required
            value={source}
            onInput={(e) => setSource(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Merge into this member</button>
      </form>
      {outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
    </section>
  );
}

const PURPOSES: Record<string, string> = { marketing_email: 'Marketing email', marketing_sms: 'Marketing SMS' };

/**
 * The member's marketing consents per purpose: granted or withdrawn, since when and where the last
 * change came from. A manager records a consent the member gives or withdraws at the counter.
 */
function ConsentSection(props: { memberId: number; isManager: boolean }) {
  const params = { member_id: props.memberId };
  const consents = useLoad(() => call('staff.members.consents', { params }), [props.memberId]);
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();

  async function change(purpose: 'marketing_email' | 'marketing_sms', granted: boolean) {
    setOutcome(undefined);
    try {
      await call('staff.members.consents.update', { params, body: { consents: [{ purpose, granted }] } });
      consents.reload();
      setOutcome({ kind: 'ok', text: `${PURPOSES[purpose]}: ${granted ? 'granted' : 'withdrawn'}.` });
    } catch (err) {
      setOutcome({ kind: 'error', text: problemText(err) });
    }
  }

  return (
    <section aria-labelledby="consents-h">
      <h2 id="consents-h">Marketing consents</h2>
      {consents.error !== undefined && <Notice kind="error">{problemText(consents.error)}</Notice>}
      {consents.data && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Purpose</th>
                <th scope="col">Consent</th>
                <th scope="col">Granted</th>
                <th scope="col">Withdrawn</th>
                <th scope="col">Source</th>
                {props.isManager && <th scope="col">Change</th>}
              </tr>
            </thead>
            <tbody>
              {consents.data.consents.map((c) => (
                <tr key={c.purpose} data-consent={c.purpose}>
                  <th scope="row">{PURPOSES[c.purpose]}</th>
                  <td>
                    <span class={`badge badge-${c.granted ? 'approved' : 'rejected'}`}>
                      {c.granted ? 'granted' : c.withdrawn_at ? 'withdrawn' : 'not given'}
                    </span>
                  </td>
                  <td>{c.granted_at ? when(c.granted_at) : '—'}</td>
                  <td>{c.withdrawn_at ? when(c.withdrawn_at) : '—'}</td>
                  <td>{c.source ?? '—'}</td>
                  {props.isManager && (
                    <td>
                      <button type="button" onClick={() => change(c.purpose, !c.granted)}>
                        {c.granted ? 'Withdraw' : 'Grant'} <span class="sr-only">{PURPOSES[c.purpose]}</span>
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
    </section>
  );
}
