import { useEffect, useState } from 'preact/hooks';
import { call, download, upload, type Answer, type Card } from '../api.ts';
import { Notice, PageTitle, problemText, when } from '../components/ui.tsx';

type Import = Answer<'staff.imports.get'>;
type Job = Import['validate_job'];

const STATUS: Record<Import['status'], string> = {
  validating: 'Validating…',
  invalid: 'Invalid: fix the lines below and upload the file again',
  validated: 'Valid: ready to execute',
  executing: 'Executing…',
  executed: 'Executed',
  failed: 'Failed',
};
/** How many of the validate job's errors the page lists (all are in the error file). */
const SHOWN_ERRORS = 20;

/** A file's media type as the import takes it: CSV by its extension or type, otherwise JSON Lines. */
const typeOf = (file: File) =>
  file.type === 'text/csv' || /\.csv$/i.test(file.name) ? 'text/csv' : 'application/x-ndjson';

function JobProgress(props: { job: Job; label: string; unit: string }) {
  const { done, total } = props.job.progress;
  return (
    <div class="progress">
      {total === null ? (
        <progress aria-label={props.label} />
      ) : (
        <progress aria-label={props.label} max={Math.max(total, 1)} value={Math.min(done, total)} />
      )}
      <span>
        {props.label}: {props.job.status}
        {total !== null && ` (${done} of ${total} ${props.unit})`}
      </span>
    </div>
  );
}

const KINDS = ['members', 'balances', 'tiers', 'history'] as const;
type Kind = (typeof KINDS)[number];

/**
 * Imports (managers): upload a CSV or JSON Lines file of members, balances, tiers or past
 * transactions (history), watch the validate
 * job, read the first errors and download the error file, then execute and watch that job.
 */
export function ImportsPage(props: { cards: Card[]; isManager: boolean }) {
  const [kind, setKind] = useState<Kind>('members');
  const [cardId, setCardId] = useState(props.cards[0]?.id);
  const [file, setFile] = useState<File>();
  const [current, setCurrent] = useState<Import>();
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);

  // While a job runs, the import is asked for again every second.
  const running = current?.status === 'validating' || current?.status === 'executing';
  useEffect(() => {
    if (!current || !running) return;
    const timer = setTimeout(() => {
      call('staff.imports.get', { params: { import_id: current.id } }).then(setCurrent, (err: unknown) =>
        setProblem(problemText(err)),
      );
    }, 1000);
    return () => clearTimeout(timer);
  }, [current, running]);

  if (!props.isManager)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Imports</PageTitle>
        <Notice kind="error">Only managers can import members and balances.</Notice>
      </main>
    );

  async function send(e: Event) {
    e.preventDefault();
    if (!file) return;
    setProblem(undefined);
    setCurrent(undefined);
    setBusy(true);
    try {
      const query = kind === 'members' ? { kind } : { kind, card_id: cardId };
      setCurrent(await upload('staff.imports.create', { query }, { data: file, type: typeOf(file) }));
    } catch (err) {
      setProblem(problemText(err));
    } finally {
      setBusy(false);
    }
  }

  async function execute() {
    if (!current) return;
    setProblem(undefined);
    try {
      setCurrent(await call('staff.imports.execute', { params: { import_id: current.id } }));
    } catch (err) {
      setProblem(problemText(err));
    }
  }

  async function errorFile() {
    if (!current) return;
    try {
      const blob = await download('staff.imports.errors', { params: { import_id: current.id } });
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = `${current.id}-errors.csv`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (err) {
      setProblem(problemText(err));
    }
  }

  const c = current;
  const errors = c?.validate_job.errors ?? [];
  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Imports</PageTitle>
      <p class="lead">
        Members first, then their balances, tiers and past transactions. A file is checked completely before anything
        changes; running the same file again changes nothing.
      </p>
      <form class="filters" onSubmit={send}>
        <label>
          What
          <select
            name="kind"
            value={kind}
            onChange={(e) => setKind(KINDS.find((k) => k === e.currentTarget.value) ?? 'members')}
          >
            <option value="members">Members</option>
            <option value="balances">Balances</option>
            <option value="tiers">Tiers</option>
            <option value="history">Past transactions (history only)</option>
          </select>
        </label>
        {kind !== 'members' && (
          <label>
            Card
            <select name="import-card" value={cardId} onChange={(e) => setCardId(Number(e.currentTarget.value))}>
              {props.cards.map((card) => (
                <option key={card.id} value={card.id}>
                  {card.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          File (CSV or JSON Lines)
          <input
            type="file"
            name="file"
            accept=".csv,.jsonl,.ndjson,text/csv,application/x-ndjson"
            required
            onChange={(e) => setFile(e.currentTarget.files?.[0])}
          />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Uploading…' : 'Upload and validate'}
        </button>
      </form>
      {problem && <Notice kind="error">{problem}</Notice>}
      {c && (
        <section aria-labelledby="import-h" data-import={c.id}>
          <h2 id="import-h">
            Import of {c.kind} ({c.format.toUpperCase()}, {new Intl.NumberFormat().format(c.bytes)} bytes)
          </h2>
          <p role="status" data-testid="import-status">
            {STATUS[c.status]}
          </p>
          <dl class="facts">
            <dt>Started</dt>
            <dd>{when(c.created_at)}</dd>
            <dt>Lines read</dt>
            <dd data-testid="import-lines">{c.counts.lines}</dd>
            <dt>Valid</dt>
            <dd data-testid="import-valid">{c.counts.valid}</dd>
            <dt>Invalid</dt>
            <dd data-testid="import-invalid">{c.counts.invalid}</dd>
            {c.execute_job && (
              <>
                <dt>Applied</dt>
                <dd data-testid="import-applied">{c.counts.applied}</dd>
                <dt>Already there (unchanged)</dt>
                <dd data-testid="import-unchanged">{c.counts.unchanged}</dd>
              </>
            )}
          </dl>
          <JobProgress job={c.validate_job} label="Validation" unit="parts of the file" />
          {c.execute_job && <JobProgress job={c.execute_job} label="Execution" unit="rows" />}
          {errors.length > 0 && (
            <>
              <h3>
                First errors ({Math.min(errors.length, SHOWN_ERRORS)} of {c.counts.invalid} lines)
              </h3>
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col" class="num">
                        Line
                      </th>
                      <th scope="col">Column</th>
                      <th scope="col">Reason</th>
                    </tr>
                  </thead>
                  <tbody>
                    {errors.slice(0, SHOWN_ERRORS).map((e, i) => (
                      <tr key={i} data-error-line={String(e.line ?? '')}>
                        <td class="num">{String(e.line ?? '')}</td>
                        <td>{String(e.column ?? '')}</td>
                        <td>{String(e.reason ?? e.message)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
          <p class="filters">
            {c.validate_job.result_url && c.counts.invalid > 0 && (
              <button type="button" onClick={errorFile}>
                Download the error file
              </button>
            )}
            {c.status === 'validated' && !c.execute_job && (
              <button type="button" class="primary" onClick={execute}>
                Execute the import
              </button>
            )}
          </p>
        </section>
      )}
    </main>
  );
}
