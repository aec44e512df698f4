import { useState } from 'preact/hooks';
import { call, type Card, type Claim } from '../api.ts';
import { Notice, PageTitle, Pager, points, problemText, useLoad, when } from '../components/ui.tsx';

/** The status filter: any (the empty value) or one of the contract's claim statuses. */
const STATUSES: readonly ('' | Claim['status'])[] = ['', 'pending', 'approved', 'rejected', 'expired'];

/**
 * The claims queue: pending claims first, then the newest; filters by card, status and date. Each
 * row shows the member, the reward, its cost and the member's spendable points; a pending one can
 * be approved or rejected with a note, and the queue shows the result at once.
 */
export function ClaimsPage(props: { cards: Card[] }) {
  const [filters, setFilters] = useState<{ card_id: string; status: '' | Claim['status']; from: string; to: string }>({
    card_id: '',
    status: '',
    from: '',
    to: '',
  });
  const [offset, setOffset] = useState(0);
  const [notes, setNotes] = useState<Record<number, string>>({});
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const [busy, setBusy] = useState<number>();
  const list = useLoad(
    () => call('staff.claims.list', { query: { ...filters, status: filters.status || undefined, limit: 20, offset } }),
    [filters, offset],
  );
  const cardName = (id: number) => props.cards.find((c) => c.id === id)?.name ?? `Card ${id}`;

  async function decide(claim: Claim, decision: 'approve' | 'reject') {
    setBusy(claim.id);
    setOutcome(undefined);
    try {
      const note = notes[claim.id]?.trim();
      const input = { params: { request_id: claim.id }, body: note ? { note } : {} };
      const r = await (decision === 'approve'
        ? call('staff.claims.approve', input)
        : call('staff.claims.reject', input));
      const c = r.claim_request;
      const who = c.member.name ?? `member ${c.member.id}`;
      setOutcome({
        kind: 'ok',
        text:
          decision === 'approve'
            ? `Claim ${c.id} approved: ${points(c.points_deducted ?? 0)} deducted from ${who}${c.member_points_balance === null ? '' : `, who now has ${points(c.member_points_balance)}`}.`
            : `Claim ${c.id} rejected: ${who} keeps their points.`,
      });
      list.reload();
    } catch (err) {
      setOutcome({ kind: 'error', text: `Claim ${claim.id}: ${problemText(err)}` });
      list.reload();
    } finally {
      setBusy(undefined);
    }
  }

  const set = (key: 'card_id' | 'from' | 'to') => (e: { currentTarget: { value: string } }) => {
    setOffset(0);
    setFilters({ ...filters, [key]: e.currentTarget.value });
  };

  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Claims queue</PageTitle>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter claims">
        <label>
          Card
          <select value={filters.card_id} onChange={set('card_id')}>
            <option value="">All cards</option>
            {props.cards
              .filter((c) => c.reward_system === 'points')
              .map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name}
                </option>
              ))}
          </select>
        </label>
        <label>
          Status
          <select
            value={filters.status}
            onChange={(e) => {
              setOffset(0);
              setFilters({ ...filters, status: STATUSES.find((s) => s === e.currentTarget.value) ?? '' });
            }}
          >
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s === '' ? 'Any (pending first)' : s}
              </option>
            ))}
          </select>
        </label>
        <label>
          From
          <input type="date" value={filters.from} onChange={set('from')} />
        </label>
        <label>
          To
          <input type="date" value={filters.to} onChange={set('to')} />
        </label>
        <button type="button" onClick={list.reload} disabled={list.loading}>
          Refresh
        </button>
      </form>
      <div aria-live="polite">{outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}</div>
      {list.error !== undefined && <Notice kind="error">{problemText(list.error)}</Notice>}
      {list.data && (
        <>
          <div class="table-wrap">
            <table>
              <caption class="sr-only">Claim requests</caption>
              <thead>
                <tr>
                  <th scope="col">Claim</th>
                  <th scope="col">Member</th>
                  <th scope="col">Reward</th>
                  <th scope="col">Cost</th>
                  <th scope="col">Member's points</th>
                  <th scope="col">Status</th>
                  <th scope="col">Decision</th>
                </tr>
              </thead>
              <tbody>
                {list.data.claim_requests.length === 0 && (
                  <tr>
                    <td colSpan={7}>No claims match these filters.</td>
                  </tr>
                )}
                {list.data.claim_requests.map((c) => (
                  <tr key={c.id} data-claim={c.id}>
                    <td>
                      #{c.id}
                      <div class="muted">{when(c.created_at)}</div>
                      <div class="muted">{cardName(c.card_id)}</div>
                    </td>
                    <td>
                      <a href={`#/members/${c.member.id}`}>{c.member.name ?? `Member ${c.member.id}`}</a>
                      <div class="muted">{c.member.email}</div>
                    </td>
                    <td>
                      {c.reward.name}
                      {c.member_note && <div class="muted">“{c.member_note}”</div>}
                    </td>
                    <td class="num">{c.reward.points_cost}</td>
                    <td class="num" data-balance>
                      {c.member_points_balance ?? '—'}
                    </td>
                    <td>
                      <span class={`badge badge-${c.status}`}>{c.status}</span>
                      {c.staff_note && <div class="muted">Note: {c.staff_note}</div>}
                    </td>
                    <td>
                      {c.status === 'pending' ? (
                        <div class="decide">
                          <label>
                            <span class="sr-only">Note for claim {c.id}</span>
                            <input
                              placeholder="Note (optional)"
                              value={notes[c.id] ?? ''}
                              onInput={(e) => setNotes({ ...notes, [c.id]: e.currentTarget.value })}
                            />
                          </label>
                          <button
                            type="button"
                            class="primary"
                            disabled={busy === c.id}
                            aria-label={`Approve claim ${c.id}`}
                            onClick={() => decide(c, 'approve')}
                          >
                            Approve
                          </button>
                          <button
                            type="button"
                            class="danger"
                            disabled={busy === c.id}
                            aria-label={`Reject claim ${c.id}`}
                            onClick={() => decide(c, 'reject')}
                          >
                            Reject
                          </button>
                        </div>
                      ) : (
                        <span class="muted">—</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager page={list.data.pagination} onPage={setOffset} label="Claims pages" />
        </>
      )}
    </main>
  );
}
