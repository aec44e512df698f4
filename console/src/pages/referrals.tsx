import { useState } from 'preact/hooks';
import { call, type Answer, type Card } from '../api.ts';
import { BarChart } from '../components/bar-chart.tsx';
import { Notice, PageTitle, problemText, useLoad } from '../components/ui.tsx';

type Period = Answer<'staff.referrals.dashboard'>['period'];
const PERIOD_NAMES: Record<Period, string> = { '7d': '7 days', '30d': '30 days', '90d': '90 days', all: 'All time' };
const PERIODS = Object.keys(PERIOD_NAMES);
const periodOf = (v: string): Period => PERIODS.find((p): p is Period => p === v) ?? '30d';

/** The referral programme of a points card: statistics per period with a chart, and the top referrers. */
export function ReferralsPage(props: { cards: Card[] }) {
  const pointsCards = props.cards.filter((c) => c.reward_system === 'points');
  const [cardId, setCardId] = useState(pointsCards[0]?.id);
  const [period, setPeriod] = useState<Period>('30d');
  const board = useLoad(
    () =>
      cardId === undefined
        ? Promise.resolve(undefined)
        : call('staff.referrals.dashboard', { query: { card_id: cardId, period, limit: 10 } }),
    [cardId, period],
  );
  const d = board.data;
  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Referrals</PageTitle>
      {pointsCards.length === 0 && <p>Referrals run on points cards; this merchant has none.</p>}
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Card
          <select value={cardId} onChange={(e) => setCardId(Number(e.currentTarget.value))}>
            {pointsCards.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Top referrers over
          <select value={period} onChange={(e) => setPeriod(periodOf(e.currentTarget.value))}>
            {Object.entries(PERIOD_NAMES).map(([p, name]) => (
              <option key={p} value={p}>
                {name}
              </option>
            ))}
          </select>
        </label>
      </form>
      {board.error !== undefined && <Notice kind="error">{problemText(board.error)}</Notice>}
      {d && (
        <>
          <section aria-labelledby="stats-h">
            <h2 id="stats-h">Referrals per period</h2>
            <BarChart
              title="Successful and pending referrals per period"
              labels={d.periods.map((p) => PERIOD_NAMES[p.period] ?? p.period)}
              series={[
                { name: 'Successful', className: 'bar-a', values: d.periods.map((p) => p.stats.successful_referrals) },
                { name: 'Pending', className: 'bar-b', values: d.periods.map((p) => p.stats.pending_referrals) },
              ]}
            />
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Period</th>
                    <th scope="col" class="num">
                      Total
                    </th>
                    <th scope="col" class="num">
                      Successful
                    </th>
                    <th scope="col" class="num">
                      Pending
                    </th>
                    <th scope="col" class="num">
                      Conversion
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.periods.map((p) => (
                    <tr key={p.period}>
                      <th scope="row">{PERIOD_NAMES[p.period]}</th>
                      <td class="num">{p.stats.total_referrals}</td>
                      <td class="num">{p.stats.successful_referrals}</td>
                      <td class="num">{p.stats.pending_referrals}</td>
                      <td class="num">{p.stats.conversion_rate} %</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
          <section aria-labelledby="top-h">
            <h2 id="top-h">Top referrers ({PERIOD_NAMES[d.period]})</h2>
            {d.top_referrers.length === 0 ? (
              <p>No referrals in this period.</p>
            ) : (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Member</th>
                      <th scope="col" class="num">
                        Successful
                      </th>
                      <th scope="col" class="num">
                        Total
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.top_referrers.map((r) => (
                      <tr key={r.member_id}>
                        <td>
                          <a href={`#/members/${r.member_id}`}>{r.name}</a> <span class="muted">{r.email}</span>
                        </td>
                        <td class="num">{r.successful_referrals}</td>
                        <td class="num">{r.total_referrals}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
        </>
      )}
    </main>
  );
}
