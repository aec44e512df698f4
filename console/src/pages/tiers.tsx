import { useState } from 'preact/hooks';
import { call, type Answer, type Card } from '../api.ts';
import { BarChart } from '../components/bar-chart.tsx';
import { Notice, PageTitle, problemText, useLoad, when } from '../components/ui.tsx';
import { tierAmount } from './member-tier.tsx';

type Settings = Answer<'staff.tiers.get'>;
interface Row {
  name: string;
  rank: string;
  entry: string;
  retain: string;
}

const METRICS: Record<string, string> = { points_earned: 'Points earned', amount_spent: 'Amount spent' };
const WINDOWS: Record<string, string> = {
  rolling: 'Rolling days',
  calendar_year: 'Calendar year',
  anniversary: 'Member anniversary',
  lifetime: 'Lifetime',
};

/**
 * Tiers: how many members hold each tier of every card (everyone), and the ladder of a card with
 * how members qualify (managers edit it; saving recomputes every member of the card as a job).
 */
export function TiersPage(props: { cards: Card[]; isManager: boolean }) {
  const all = useLoad(
    () => Promise.all(props.cards.map((card) => call('staff.tiers.get', { params: { card_id: card.id } }))),
    [props.cards],
  );
  const [cardId, setCardId] = useState(props.cards[0]?.id);
  // Kept here, not in the form: saving reloads the ladder, whose new version remounts the form.
  const [saved, setSaved] = useState<string>();
  const withTiers = (all.data ?? []).filter((s) => s.enabled);
  const card = props.cards.find((c) => c.id === cardId);
  const selected = all.data?.find((s) => s.card_id === cardId);
  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Tiers</PageTitle>
      {all.error !== undefined && <Notice kind="error">{problemText(all.error)}</Notice>}
      <section aria-labelledby="tier-counts-h">
        <h2 id="tier-counts-h">Members per tier</h2>
        {all.data && withTiers.length === 0 && <p>No card has tiers yet.</p>}
        {withTiers.map((s) => {
          const c = props.cards.find((x) => x.id === s.card_id);
          return (
            <div key={s.card_id} data-testid={`tier-counts-${s.card_id}`}>
              <h3>{c?.name ?? `Card ${s.card_id}`}</h3>
              <BarChart
                title={`Members per tier, ${c?.name ?? s.card_id}`}
                labels={s.tiers.map((t) => t.name)}
                series={[{ name: 'Members', className: 'bar-a', values: s.tiers.map((t) => t.members) }]}
              />
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Tier</th>
                      <th scope="col" class="num">
                        Entry
                      </th>
                      <th scope="col" class="num">
                        Retain
                      </th>
                      <th scope="col" class="num">
                        Members
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.tiers.map((t) => (
                      <tr key={t.rank}>
                        <th scope="row">{t.name}</th>
                        <td class="num">{c ? tierAmount(t.entry_threshold, s.metric, c) : t.entry_threshold}</td>
                        <td class="num">{c ? tierAmount(t.retain_threshold, s.metric, c) : t.retain_threshold}</td>
                        <td class="num" data-tier-members={t.name}>
                          {t.members}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </div>
          );
        })}
      </section>
      {props.isManager && (
        <section aria-labelledby="ladder-h">
          <h2 id="ladder-h">Edit a ladder</h2>
          <label>
            Card
            <select
              name="ladder-card"
              value={cardId}
              onChange={(e) => {
                setCardId(Number(e.currentTarget.value));
                setSaved(undefined);
              }}
            >
              {props.cards.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name}
                </option>
              ))}
            </select>
          </label>
          {selected && card && (
            <LadderForm
              key={`${selected.card_id}.${selected.version}`}
              settings={selected}
              onSaving={() => setSaved(undefined)}
              onSaved={(text) => {
                setSaved(text);
                all.reload();
              }}
            />
          )}
          {saved && <Notice kind="ok">{saved}</Notice>}
        </section>
      )}
    </main>
  );
}

const rowsOf = (s: Settings): Row[] =>
  s.tiers.length > 0
    ? s.tiers.map((t) => ({
        name: t.name,
        rank: String(t.rank),
        entry: String(t.entry_threshold),
        retain: String(t.retain_threshold),
      }))
    : [{ name: 'Bronze', rank: '1', entry: '0', retain: '0' }];

/** The ladder of one card, a row per tier, with the metric and the window; saved whole (PUT). */
function LadderForm(props: { settings: Settings; onSaving: () => void; onSaved: (text: string) => void }) {
  const s = props.settings;
  const [rows, setRows] = useState<Row[]>(() => rowsOf(s));
  const [metric, setMetric] = useState(s.metric);
  const [win, setWin] = useState(s.window);
  const [days, setDays] = useState(String(s.window_days));
  const [failure, setFailure] = useState<string>();
  const edit = (i: number, field: keyof Row, value: string) =>
    setRows((rs) => rs.map((r, j) => (j === i ? { ...r, [field]: value } : r)));

  async function save(e: Event) {
    e.preventDefault();
    setFailure(undefined);
    props.onSaving();
    try {
      const saved = await call('staff.tiers.put', {
        params: { card_id: s.card_id },
        body: {
          tiers: rows.map((r) => ({
            name: r.name,
            rank: Number(r.rank),
            entry_threshold: Number(r.entry),
            retain_threshold: Number(r.retain),
          })),
          metric,
          count_bonuses: s.count_bonuses,
          window: win,
          window_days: Number(days),
          validity_days: s.validity_days,
          warning_days: s.warning_days,
        },
      });
      props.onSaved(
        `Saved: ${saved.tiers.length} tiers${saved.recompute_job_id ? `; every member is being recomputed (job ${saved.recompute_job_id})` : ''}.`,
      );
    } catch (err) {
      setFailure(problemText(err));
    }
  }

  return (
    <form onSubmit={save} class="ladder">
      <p class="muted">
        {s.version === 0
          ? 'No ladder yet.'
          : `Version ${s.version}${s.updated_at ? `, saved ${when(s.updated_at)}` : ''}.`}{' '}
        The lowest tier starts at 0; a member keeps a tier at its review with the retain threshold.
      </p>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Rank</th>
              <th scope="col">Entry threshold</th>
              <th scope="col">Retain threshold</th>
              <th scope="col">Remove</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={i}>
                <td>
                  <input
                    aria-label={`Tier ${i + 1} name`}
                    required
                    value={r.name}
                    onInput={(e) => edit(i, 'name', e.currentTarget.value)}
                  />
                </td>
                <td>
                  <input
                    aria-label={`Tier ${i + 1} rank`}
                    type="number"
                    required
                    value={r.rank}
                    onInput={(e) => edit(i, 'rank', e.currentTarget.value)}
                  />
                </td>
                <td>
                  <input
                    aria-label={`Tier ${i + 1} entry threshold`}
                    type="number"
                    min="0"
                    step="any"
                    required
                    value={r.entry}
                    onInput={(e) => edit(i, 'entry', e.currentTarget.value)}
                  />
                </td>
                <td>
                  <input
                    aria-label={`Tier ${i + 1} retain threshold`}
                    type="number"
                    min="0"
                    step="any"
                    required
                    value={r.retain}
                    onInput={(e) => edit(i, 'retain', e.currentTarget.value)}
                  />
                </td>
                <td>
                  <button type="button" onClick={() => setRows((rs) => rs.filter((_, j) => j !== i))}>
                    Remove <span class="sr-only">tier {i + 1}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="filters">
        <button
          type="button"
          disabled={rows.length >= 10}
          onClick={() =>
            setRows((rs) => [
              ...rs,
              { name: '', rank: String(Math.max(0, ...rs.map((r) => Number(r.rank) || 0)) + 1), entry: '', retain: '' },
            ])
          }
        >
          Add a tier
        </button>
        <label>
          Qualify on
          <select value={metric} onChange={(e) => setMetric(e.currentTarget.value)}>
            {Object.entries(METRICS).map(([v, name]) => (
              <option key={v} value={v}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Window
          <select value={win} onChange={(e) => setWin(e.currentTarget.value)}>
            {Object.entries(WINDOWS).map(([v, name]) => (
              <option key={v} value={v}>
                {name}
              </option>
            ))}
          </select>
        </label>
        {win === 'rolling' && (
          <label>
            Days
            <input
              type="number"
              min="1"
              max="3660"
              required
              value={days}
              onInput={(e) => setDays(e.currentTarget.value)}
            />
          </label>
        )}
        <button type="submit" class="primary">
          Save ladder
        </button>
      </div>
      {failure && <Notice kind="error">{failure}</Notice>}
    </form>
  );
}
