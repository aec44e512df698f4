import { useState } from 'preact/hooks';
import { download, type Card } from '../api.ts';
import { Notice, PageTitle, problemText } from '../components/ui.tsx';

const KINDS = ['journal', 'balances', 'lots', 'members'] as const;
type Kind = (typeof KINDS)[number];
const LABELS: Record<Kind, string> = {
  journal: 'Transactions (journal)',
  balances: 'Balances',
  lots: 'Lots',
  members: 'Members',
};

/**
 * Exports (managers): the journal, balances, lots or members as CSV or JSON Lines, of one card or
 * all (members belong to no card), transactions and lots between two dates (balances are as they
 * stand). The file is what GET /api/v1/exports/{entity} gives, saved under its own name.
 */
export function ExportsPage(props: { cards: Card[]; isManager: boolean }) {
  const [kind, setKind] = useState<Kind>('journal');
  const [cardId, setCardId] = useState<number | undefined>(props.cards[0]?.id);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [format, setFormat] = useState<'csv' | 'jsonl'>('csv');
  const [problem, setProblem] = useState<string>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);

  if (!props.isManager)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Exports</PageTitle>
        <Notice kind="error">Only managers can export the programme’s data.</Notice>
      </main>
    );

  const ranged = kind === 'journal' || kind === 'lots';
  const carded = kind !== 'members';

  async function send(e: Event) {
    e.preventDefault();
    setProblem(undefined);
    setDone(undefined);
    setBusy(true);
    try {
      const query = {
        format,
        ...(carded && cardId !== undefined ? { card_id: cardId } : {}),
        ...(ranged && from ? { from } : {}),
        ...(ranged && to ? { to } : {}),
      };
      const blob = await download('staff.exports.download', { params: { entity: kind }, query });
      const name = `${kind}${carded && cardId !== undefined ? `-card-${cardId}` : ''}.${format}`;
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
      setDone(`${name}: ${new Intl.NumberFormat().format(blob.size)} bytes`);
    } catch (err) {
      setProblem(problemText(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Exports</PageTitle>
      <p class="lead">
        Everything finance needs, as CSV or JSON Lines. Transactions and lots can be limited to dates (UTC; the end date
        counts whole); balances are as they stand now.
      </p>
      <form class="filters" onSubmit={send}>
        <label>
          What
          <select
            name="export-kind"
            value={kind}
            onChange={(e) => setKind(KINDS.find((k) => k === e.currentTarget.value) ?? 'journal')}
          >
            {KINDS.map((k) => (
              <option key={k} value={k}>
                {LABELS[k]}
              </option>
            ))}
          </select>
        </label>
        {carded && (
          <label>
            Card
            <select
              name="export-card"
              value={cardId ?? ''}
              onChange={(e) => setCardId(e.currentTarget.value === '' ? undefined : Number(e.currentTarget.value))}
            >
              <option value="">All cards</option>
              {props.cards.map((card) => (
                <option key={card.id} value={card.id}>
                  {card.name}
                </option>
              ))}
            </select>
          </label>
        )}
        {ranged && (
          <>
            <label>
              From
              <input type="date" name="export-from" value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
            </label>
            <label>
              To
              <input type="date" name="export-to" value={to} onInput={(e) => setTo(e.currentTarget.value)} />
            </label>
          </>
        )}
        <label>
          Format
          <select
            name="export-format"
            value={format}
            onChange={(e) => setFormat(e.currentTarget.value === 'jsonl' ? 'jsonl' : 'csv')}
          >
            <option value="csv">CSV</option>
            <option value="jsonl">JSON Lines</option>
          </select>
        </label>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Exporting…' : 'Download'}
        </button>
      </form>
      {problem && <Notice kind="error">{problem}</Notice>}
      {done && (
        <p role="status" data-testid="export-done">
          Downloaded {done}
        </p>
      )}
    </main>
  );
}
