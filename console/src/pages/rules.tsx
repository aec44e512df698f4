import { useEffect, useState } from 'preact/hooks';
import { call, type Answer, type Card } from '../api.ts';
import { Notice, PageTitle, problemText } from '../components/ui.tsx';

type Rule = Answer<'staff.rules.list'>['rules'][number];
type Preview = Answer<'staff.rules.preview'>;

const SAMPLE = [
  { sku: 'croissant', category: 'pastry', quantity: 2, unit_price: 2.5 },
  { sku: 'latte', category: 'drink', quantity: 1, unit_price: 7.5 },
];

/** The sample purchase's lines, one `sku, category, quantity, unit price` a line. */
function parseLines(text: string) {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const [sku = '', category = '', quantity = '1', price = '0'] = l.split(',').map((x) => x.trim());
      return { sku, ...(category ? { category } : {}), quantity: Number(quantity), unit_price: Number(price) };
    });
}

const linesText = SAMPLE.map((l) => `${l.sku}, ${l.category}, ${l.quantity}, ${l.unit_price}`).join('\n');

/**
 * Managers write a card's earning rules: a new rule is a draft, previewed against a sample
 * purchase (what each rule would give and why, drafts included), then activated or paused.
 */
export function RulesPage(props: { cards: Card[]; isManager: boolean }) {
  const [cardId, setCardId] = useState(props.cards[0]?.id);
  const [rules, setRules] = useState<Rule[]>([]);
  const [form, setForm] = useState({ name: '', kind: 'multiplier', value: '2', categories: 'pastry', priority: '0' });
  const [lines, setLines] = useState(linesText);
  const [preview, setPreview] = useState<Preview>();
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const card = props.cards.find((c) => c.id === cardId);
  const isPoints = card?.reward_system !== 'cashback';

  const reload = () =>
    cardId === undefined
      ? Promise.resolve()
      : call('staff.rules.list', { params: { card_id: cardId } }).then(
          (r) => setRules(r.rules),
          (err: unknown) => setOutcome({ kind: 'error', text: problemText(err) }),
        );
  useEffect(() => void reload(), [cardId]);

  if (!props.isManager)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Earning rules</PageTitle>
        <Notice kind="error">Only managers can manage earning rules. Your role is staff; ask a manager.</Notice>
      </main>
    );

  async function act(what: () => Promise<string>) {
    setOutcome(undefined);
    try {
      setOutcome({ kind: 'ok', text: await what() });
      await reload();
    } catch (err) {
      setOutcome({ kind: 'error', text: problemText(err) });
    }
  }

  const create = (e: Event) => {
    e.preventDefault();
    if (cardId === undefined) return;
    const value = Number(form.value);
    const valueField =
      form.kind === 'multiplier'
        ? { factor: value }
        : form.kind === 'per_amount' && !isPoints
          ? { percentage: value }
          : form.kind === 'fixed' && !isPoints
            ? { amount: value }
            : { points: value };
    const categories = form.categories
      .split(',')
      .map((c) => c.trim())
      .filter(Boolean);
    void act(async () => {
      const { rule } = await call('staff.rules.create', {
        params: { card_id: cardId },
        body: {
          name: form.name.trim(),
          kind: form.kind,
          priority: Number(form.priority),
          ...valueField,
          conditions: categories.length > 0 ? { categories } : {},
        },
      });
      return `Draft "${rule.name}" created. Preview it, then activate it.`;
    });
  };

  const runPreview = (e: Event) => {
    e.preventDefault();
    if (cardId === undefined) return;
    const items = parseLines(lines);
    const amount = items.reduce((a, l) => a + Math.round(l.quantity * l.unit_price * 100), 0) / 100;
    void act(async () => {
      const p = await call('staff.rules.preview', {
        params: { card_id: cardId },
        body: { purchase_amount: amount, line_items: items },
      });
      setPreview(p);
      return `A purchase of ${amount.toFixed(2)} would earn ${p.total} (base ${p.base}).`;
    });
  };

  const change = (rule: Rule, to: 'activate' | 'pause') =>
    act(async () => {
      const op = to === 'activate' ? 'staff.rules.activate' : 'staff.rules.pause';
      const r = await call(op, { params: { card_id: rule.card_id, rule_id: rule.id } });
      return `"${r.rule.name}" is ${r.rule.status}.`;
    });

  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Earning rules</PageTitle>
      <form class="filters">
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
      </form>
      <table class="list">
        <caption>Rules in the order they run</caption>
        <thead>
          <tr>
            <th scope="col">Rule</th>
            <th scope="col">Kind</th>
            <th scope="col">Priority</th>
            <th scope="col">Status</th>
            <th scope="col">Version</th>
            <th scope="col">Action</th>
          </tr>
        </thead>
        <tbody>
          {rules.map((r) => (
            <tr key={r.id}>
              <td>{r.name}</td>
              <td>{r.kind}</td>
              <td>{r.priority}</td>
              <td>{r.status}</td>
              <td>{r.version}</td>
              <td>
                {(r.status === 'draft' || r.status === 'paused') && (
                  <button type="button" onClick={() => change(r, 'activate')}>
                    Activate {r.name}
                  </button>
                )}
                {r.status === 'active' && (
                  <button type="button" onClick={() => change(r, 'pause')}>
                    Pause {r.name}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form class="stack narrow" onSubmit={create} aria-label="New rule">
        <h2>New rule (a draft)</h2>
        <label>
          Name
          <input
            name="rule-name"
            required
            value={form.name}
            onInput={(e) => setForm({ ...form, name: e.currentTarget.value })}
          />
        </label>
        <label>
          Kind
          <select name="kind" value={form.kind} onChange={(e) => setForm({ ...form, kind: e.currentTarget.value })}>
            <option value="multiplier">multiplier (× factor)</option>
            <option value="per_amount">per amount ({isPoints ? 'points per unit' : 'extra %'})</option>
            <option value="fixed">fixed ({isPoints ? 'points' : 'amount'} per purchase)</option>
          </select>
        </label>
        <label>
          {form.kind === 'multiplier'
            ? 'Factor'
            : isPoints
              ? 'Points'
              : form.kind === 'fixed'
                ? 'Amount'
                : 'Percentage'}
          <input
            name="value"
            type="number"
            step="any"
            required
            value={form.value}
            onInput={(e) => setForm({ ...form, value: e.currentTarget.value })}
          />
        </label>
        <label>
          Categories (comma separated; empty: the whole purchase)
          <input
            name="categories"
            value={form.categories}
            onInput={(e) => setForm({ ...form, categories: e.currentTarget.value })}
          />
        </label>
        <label>
          Priority (higher runs first)
          <input
            name="priority"
            type="number"
            step="1"
            value={form.priority}
            onInput={(e) => setForm({ ...form, priority: e.currentTarget.value })}
          />
        </label>
        <button type="submit" class="primary">
          Create draft
        </button>
      </form>
      <form class="stack narrow" onSubmit={runPreview} aria-label="Preview">
        <h2>Preview against a sample purchase</h2>
        <label>
          Lines (sku, category, quantity, unit price; one a line)
          <textarea name="lines" rows={4} value={lines} onInput={(e) => setLines(e.currentTarget.value)} />
        </label>
        <button type="submit">Preview</button>
      </form>
      <div aria-live="polite">{outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}</div>
      {preview && (
        <table class="list">
          <caption>Trace: every rule, in the order it ran</caption>
          <thead>
            <tr>
              <th scope="col">Rule</th>
              <th scope="col">Status</th>
              <th scope="col">Matched</th>
              <th scope="col">Gives</th>
              <th scope="col">Why</th>
            </tr>
          </thead>
          <tbody>
            {preview.trace.map((t) => (
              <tr key={t.rule_id}>
                <td>{t.name}</td>
                <td>{t.status}</td>
                <td>{t.matched ? 'yes' : 'no'}</td>
                <td>{t.gave}</td>
                <td>{t.reason ?? (t.capped ? 'capped' : '')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
