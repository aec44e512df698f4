import { useState } from 'preact/hooks';
import { call, type Answer, type Card } from '../api.ts';
import { BarChart } from '../components/bar-chart.tsx';
import { Notice, PageTitle, money, problemText, useLoad } from '../components/ui.tsx';

type Report = Answer<'staff.cards.report'>;
type Granularity = Report['granularity'];
const GRANULARITIES: Record<Granularity, string> = { day: 'Day', week: 'Week', month: 'Month' };
const granularityOf = (v: string): Granularity => (v === 'week' || v === 'month' ? v : 'day');
const FIGURES = ['issued', 'redeemed', 'expired', 'refunded'] as const;
const FIGURE_NAMES: Record<(typeof FIGURES)[number], string> = {
  issued: 'Issued',
  redeemed: 'Redeemed',
  expired: 'Expired',
  refunded: 'Refunded',
};

const rate = (r: number | null) => (r === null ? '—' : `${(r * 100).toFixed(1)} %`);

/** The report's periods as CSV (one line per period), what the download holds. */
export function reportCsv(r: Report): string {
  const head = ['period_start', 'issued', 'redeemed', 'expired', 'refunded', 'adjusted', 'active_members'];
  const lines = r.periods.map((p) =>
    [p.start, p.issued, p.redeemed, p.expired, p.refunded, p.adjusted, p.active_members].join(','),
  );
  return `${[head.join(','), ...lines].join('\n')}\n`;
}

/**
 * The programme dashboard (managers): a card's report per day, week or month of its time zone —
 * issued, redeemed, expired and refunded as a chart with its table, the outstanding balance and
 * its value, breakage, redemption rate, active members and the top rewards — and a CSV download.
 */
export function ProgrammePage(props: { cards: Card[]; isManager: boolean }) {
  const [cardId, setCardId] = useState(props.cards[0]?.id);
  const [granularity, setGranularity] = useState<Granularity>('day');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const report = useLoad(
    () =>
      cardId === undefined || !props.isManager
        ? Promise.resolve(undefined)
        : call('staff.cards.report', {
            params: { card_id: cardId },
            query: { granularity, ...(from ? { from } : {}), ...(to ? { to } : {}) },
          }),
    [cardId, granularity, from, to, props.isManager],
  );
  if (!props.isManager)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Programme</PageTitle>
        <Notice kind="error">Only managers can see the programme report.</Notice>
      </main>
    );
  const r = report.data;
  const unit = (n: number) =>
    r && r.reward_system === 'cashback' ? money(n, r.currency) : new Intl.NumberFormat().format(n);

  function downloadCsv() {
    if (!r) return;
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([reportCsv(r)], { type: 'text/csv' }));
    a.download = `report-card-${r.card_id}-${r.from}-${r.to}-${r.granularity}.csv`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }

  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Programme</PageTitle>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Card
          <select name="report-card" value={cardId} onChange={(e) => setCardId(Number(e.currentTarget.value))}>
            {props.cards.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          From
          <input type="date" name="from" value={from} onChange={(e) => setFrom(e.currentTarget.value)} />
        </label>
        <label>
          To
          <input type="date" name="to" value={to} onChange={(e) => setTo(e.currentTarget.value)} />
        </label>
        <label>
          Per
          <select value={granularity} onChange={(e) => setGranularity(granularityOf(e.currentTarget.value))}>
            {Object.entries(GRANULARITIES).map(([g, name]) => (
              <option key={g} value={g}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={report.reload}>
          Refresh
        </button>
        <button type="button" onClick={downloadCsv} disabled={!r}>
          Download CSV
        </button>
      </form>
      {report.error !== undefined && <Notice kind="error">{problemText(report.error)}</Notice>}
      {r && (
        <>
          <p class="muted">
            {r.from} to {r.to} ({r.time_zone}), {r.reward_system === 'points' ? 'points' : r.currency}.
          </p>
          <dl class="facts" data-testid="report-totals">
            <dt>Outstanding balance</dt>
            <dd data-figure="outstanding">{unit(r.outstanding.balance)}</dd>
            <dt>Liability</dt>
            <dd data-figure="liability">
              {r.outstanding.liability === null ? 'no point value set' : money(r.outstanding.liability, r.currency)}
            </dd>
            <dt>Issued</dt>
            <dd data-figure="issued">{unit(r.totals.issued)}</dd>
            <dt>Redeemed</dt>
            <dd data-figure="redeemed">{unit(r.totals.redeemed)}</dd>
            <dt>Expired</dt>
            <dd data-figure="expired">{unit(r.totals.expired)}</dd>
            <dt>Refunded</dt>
            <dd data-figure="refunded">{unit(r.totals.refunded)}</dd>
            <dt>Breakage (expired ÷ issued)</dt>
            <dd data-figure="breakage">{rate(r.totals.breakage)}</dd>
            <dt>Redemption rate</dt>
            <dd data-figure="redemption-rate">{rate(r.totals.redemption_rate)}</dd>
            <dt>Active members</dt>
            <dd data-figure="active-members">{r.totals.active_members}</dd>
          </dl>
          <section aria-labelledby="periods-h">
            <h2 id="periods-h">Per {r.granularity}</h2>
            <BarChart
              title={`Issued, redeemed, expired and refunded per ${r.granularity}`}
              labels={r.periods.map((p) => p.start)}
              series={FIGURES.map((f, i) => ({
                name: FIGURE_NAMES[f],
                className: `bar-${'abcd'[i]}`,
                values: r.periods.map((p) => p[f]),
              }))}
            />
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Period from</th>
                    {FIGURES.map((f) => (
                      <th scope="col" class="num" key={f}>
                        {FIGURE_NAMES[f]}
                      </th>
                    ))}
                    <th scope="col" class="num">
                      Adjusted
                    </th>
                    <th scope="col" class="num">
                      Active members
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {r.periods.map((p) => (
                    <tr key={p.start} data-period={p.start}>
                      <th scope="row">{p.start}</th>
                      {FIGURES.map((f) => (
                        <td class="num" key={f}>
                          {unit(p[f])}
                        </td>
                      ))}
                      <td class="num">{unit(p.adjusted)}</td>
                      <td class="num">{p.active_members}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
          <section aria-labelledby="top-rewards-h">
            <h2 id="top-rewards-h">Top rewards</h2>
            {r.top_rewards.length === 0 ? (
              <p>No reward was redeemed in this range.</p>
            ) : (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Reward</th>
                      <th scope="col" class="num">
                        Redemptions
                      </th>
                      <th scope="col" class="num">
                        Amount
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {r.top_rewards.map((t) => (
                      <tr key={t.reward_id} data-reward={t.reward_id}>
                        <th scope="row">{t.name}</th>
                        <td class="num">{t.redemptions}</td>
                        <td class="num">{unit(t.amount)}</td>
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
