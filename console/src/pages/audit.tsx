import { useState } from 'preact/hooks';
import { call, type AuditRow } from '../api.ts';
import { Notice, PageTitle, Pager, problemText, useLoad, when } from '../components/ui.tsx';

const ACTIONS = ['', 'claim', 'balance.adjusted', 'staff', 'app', 'card', 'reward', 'tenant.created'];

const actorText = (a: AuditRow['actor']) =>
  a.type === 'staff' ? `${a.email} (${a.role})` : a.type === 'app' ? `app ${a.id}` : 'operator';
const pairs = (o: Record<string, unknown>) =>
  Object.entries(o)
    .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(', ');

/** The tenant's audit log (managers): filters by actor, action and date, and a check of its hash chain. */
export function AuditPage(props: { isManager: boolean }) {
  const [filters, setFilters] = useState({ actor: '', action: '', from: '', to: '' });
  const [draft, setDraft] = useState(filters);
  const [offset, setOffset] = useState(0);
  const [verdict, setVerdict] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const [checking, setChecking] = useState(false);
  const log = useLoad(
    () =>
      props.isManager
        ? call('staff.audit.list', { query: { ...filters, limit: 25, offset } })
        : Promise.resolve(undefined),
    [filters, offset],
  );

  if (!props.isManager)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Audit log</PageTitle>
        <Notice kind="error">Only managers can read the audit log.</Notice>
      </main>
    );

  async function verify() {
    setChecking(true);
    setVerdict(undefined);
    try {
      const v = await call('staff.audit.verify', { query: {} });
      setVerdict(
        v.valid
          ? { kind: 'ok', text: `Chain intact: ${v.rows_checked} rows verified (head ${v.head.seq}).` }
          : {
              kind: 'error',
              text: v.problem ? `Chain broken at row ${v.problem.seq}: ${v.problem.reason}.` : 'Chain broken.',
            },
      );
    } catch (err) {
      setVerdict({ kind: 'error', text: problemText(err) });
    } finally {
      setChecking(false);
    }
  }

  const field = (key: keyof typeof draft) => (e: { currentTarget: { value: string } }) =>
    setDraft({ ...draft, [key]: e.currentTarget.value });

  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Audit log</PageTitle>
      <p>
        <button type="button" class="primary" onClick={verify} disabled={checking}>
          Verify chain
        </button>
      </p>
      <div aria-live="polite">{verdict && <Notice kind={verdict.kind}>{verdict.text}</Notice>}</div>
      <form
        class="filters"
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setFilters(draft);
        }}
      >
        <label>
          Actor (email, app id or “operator”)
          <input name="actor" value={draft.actor} onInput={field('actor')} />
        </label>
        <label>
          Action
          <select name="action" value={draft.action} onChange={field('action')}>
            {ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a === '' ? 'Any' : a}
              </option>
            ))}
          </select>
        </label>
        <label>
          From
          <input type="date" value={draft.from} onChange={field('from')} />
        </label>
        <label>
          To
          <input type="date" value={draft.to} onChange={field('to')} />
        </label>
        <button type="submit">Apply filters</button>
      </form>
      {log.error !== undefined && <Notice kind="error">{problemText(log.error)}</Notice>}
      {log.data && (
        <>
          <div class="table-wrap">
            <table>
              <caption class="sr-only">Audit entries, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">When</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Action</th>
                  <th scope="col">On</th>
                  <th scope="col">Amounts</th>
                  <th scope="col">Details</th>
                  <th scope="col">Request</th>
                </tr>
              </thead>
              <tbody>
                {log.data.entries.length === 0 && (
                  <tr>
                    <td colSpan={8}>No entries match these filters.</td>
                  </tr>
                )}
                {log.data.entries.map((e) => (
                  <tr key={e.seq}>
                    <td class="num">{e.seq}</td>
                    <td>{when(e.occurred_at)}</td>
                    <td>{actorText(e.actor)}</td>
                    <td>
                      <code>{e.action}</code>
                    </td>
                    <td>{pairs(e.target)}</td>
                    <td>{pairs(e.amounts)}</td>
                    <td>{pairs(e.details)}</td>
                    <td>
                      <code class="muted">{e.request_id.slice(0, 8)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager page={log.data.pagination} onPage={setOffset} label="Audit log pages" />
        </>
      )}
    </main>
  );
}
