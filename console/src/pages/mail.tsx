import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, type Answer, type Input } from '../api.ts';
import { Notice, PageTitle, problemText, useLoad, when } from '../components/ui.tsx';

type Settings = Answer<'staff.mail.settings.get'>['mail'];
type Kind = Answer<'staff.mail.templates.list'>['kinds'][number];
type KindName = Input<'staff.mail.templates.get'>['params']['kind'];
type Locale = Settings['default_locale'];
type Preview = Answer<'staff.mail.templates.preview'>['preview'];
type Field = 'subject' | 'body';
interface Problem {
  field: Field;
  message: string;
  line?: number;
  column?: number;
}

const LOCALES: Record<Locale, string> = { en: 'English', fr: 'French', ar: 'Arabic (right to left)' };
const localeOf = (v: string): Locale => (v === 'fr' || v === 'ar' ? v : 'en');

/** A template's errors as the API tells them (422 invalid_template: `fields`), else none. */
function problemsOf(err: unknown): Problem[] | undefined {
  if (!(err instanceof ApiError) || err.code !== 'invalid_template' || !Array.isArray(err.details.fields))
    return undefined;
  return err.details.fields.flatMap((f: unknown): Problem[] => {
    if (typeof f !== 'object' || f === null) return [];
    const field: unknown = Reflect.get(f, 'field');
    const message: unknown = Reflect.get(f, 'message');
    const line: unknown = Reflect.get(f, 'line');
    const column: unknown = Reflect.get(f, 'column');
    if ((field !== 'subject' && field !== 'body') || typeof message !== 'string') return [];
    return [
      {
        field,
        message,
        ...(typeof line === 'number' ? { line } : {}),
        ...(typeof column === 'number' ? { column } : {}),
      },
    ];
  });
}

/**
 * Mail (managers): the tenant's branding of every mail (sender name, Reply-To, logo, colours,
 * footer, default language) and its own templates per message kind and language, edited with the
 * kind's variables listed and a live preview (the HTML in a sandboxed frame, and the text part).
 */
export function MailPage(props: { isManager: boolean }) {
  if (!props.isManager)
    return (
      <main id="main" tabIndex={-1}>
        <PageTitle>Mail</PageTitle>
        <Notice kind="error">Only managers can change the mail.</Notice>
      </main>
    );
  return (
    <main id="main" tabIndex={-1}>
      <PageTitle>Mail</PageTitle>
      <BrandingForm />
      <TemplateEditor />
    </main>
  );
}

const TEXT_FIELDS: { key: 'sender_name' | 'reply_to' | 'logo_url' | 'postal_address' | 'contact'; label: string }[] = [
  { key: 'sender_name', label: 'Sender name' },
  { key: 'reply_to', label: 'Reply-To address' },
  { key: 'logo_url', label: 'Logo URL (https)' },
  { key: 'postal_address', label: 'Footer postal address' },
  { key: 'contact', label: 'Footer contact' },
];

function BrandingForm() {
  const loaded = useLoad(() => call('staff.mail.settings.get'), []);
  const [form, setForm] = useState<Settings>();
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();
  useEffect(() => setForm(loaded.data?.mail), [loaded.data]);

  async function save(e: Event) {
    e.preventDefault();
    if (!form) return;
    setOutcome(undefined);
    const text = (v: string | null) => (v && v.trim() !== '' ? v.trim() : null);
    try {
      const r = await call('staff.mail.settings.update', {
        body: {
          sender_name: text(form.sender_name),
          reply_to: text(form.reply_to),
          logo_url: text(form.logo_url),
          primary_color: form.primary_color,
          background_color: form.background_color,
          postal_address: text(form.postal_address),
          contact: text(form.contact),
          default_locale: form.default_locale,
        },
      });
      setForm(r.mail);
      setOutcome({ kind: 'ok', text: 'Mail settings saved.' });
    } catch (err) {
      setOutcome({ kind: 'error', text: problemText(err) });
    }
  }

  return (
    <section aria-labelledby="branding-h">
      <h2 id="branding-h">Branding</h2>
      {loaded.error !== undefined && <Notice kind="error">{problemText(loaded.error)}</Notice>}
      {form && (
        <form class="filters" onSubmit={save}>
          {TEXT_FIELDS.map((f) => (
            <label key={f.key}>
              {f.label}
              <input value={form[f.key] ?? ''} onInput={(e) => setForm({ ...form, [f.key]: e.currentTarget.value })} />
            </label>
          ))}
          <label>
            Header colour
            <input
              type="color"
              value={form.primary_color}
              onInput={(e) => setForm({ ...form, primary_color: e.currentTarget.value })}
            />
          </label>
          <label>
            Background colour
            <input
              type="color"
              value={form.background_color}
              onInput={(e) => setForm({ ...form, background_color: e.currentTarget.value })}
            />
          </label>
          <label>
            Default language
            <select
              value={form.default_locale}
              onChange={(e) => setForm({ ...form, default_locale: localeOf(e.currentTarget.value) })}
            >
              {Object.entries(LOCALES).map(([v, name]) => (
                <option key={v} value={v}>
                  {name}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" class="primary">
            Save branding
          </button>
        </form>
      )}
      <div aria-live="polite">{outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}</div>
    </section>
  );
}

function TemplateEditor() {
  const kinds = useLoad(() => call('staff.mail.templates.list'), []);
  const [kind, setKind] = useState<KindName>('member_code');
  const [locale, setLocale] = useState<Locale>('en');
  const [text, setText] = useState<{ subject: string; body: string }>();
  const [problems, setProblems] = useState<Problem[]>([]);
  const [preview, setPreview] = useState<Preview>();
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const current = useLoad(() => call('staff.mail.templates.get', { params: { kind, locale } }), [kind, locale]);
  const spec = kinds.data?.kinds.find((k) => k.kind === kind);
  const template = current.data?.template;

  useEffect(() => {
    if (template) setText({ subject: template.subject, body: template.body });
    setProblems([]);
  }, [template]);

  // The preview follows the text as it is typed (a moment after the last key).
  useEffect(() => {
    if (!text) return;
    const timer = setTimeout(() => {
      call('staff.mail.templates.preview', { params: { kind, locale }, body: text }).then(
        (r) => (setPreview(r.preview), setProblems([])),
        (err: unknown) => setProblems(problemsOf(err) ?? []),
      );
    }, 300);
    return () => clearTimeout(timer);
  }, [text, kind, locale]);

  async function run(action: () => Promise<string>) {
    setOutcome(undefined);
    try {
      setOutcome({ kind: 'ok', text: await action() });
      kinds.reload();
      current.reload();
    } catch (err) {
      const found = problemsOf(err);
      if (found) setProblems(found);
      setOutcome({
        kind: 'error',
        text: found ? 'The template was not saved: see the errors below.' : problemText(err),
      });
    }
  }

  const save = (e: Event) => {
    e.preventDefault();
    if (text)
      void run(async () => {
        await call('staff.mail.templates.update', { params: { kind, locale }, body: text });
        return `Saved: ${kind} in ${LOCALES[locale]} now uses your template.`;
      });
  };
  const reset = () =>
    run(async () => {
      await call('staff.mail.templates.reset', { params: { kind, locale } });
      return `${kind} in ${LOCALES[locale]} uses the default template again.`;
    });

  return (
    <section aria-labelledby="templates-h">
      <h2 id="templates-h">Templates</h2>
      {kinds.error !== undefined && <Notice kind="error">{problemText(kinds.error)}</Notice>}
      <div class="filters">
        <label>
          Message
          <select
            class="wide-select"
            value={kind}
            onChange={(e) => setKind(kindOf(kinds.data?.kinds, e.currentTarget.value))}
          >
            {kinds.data?.kinds.map((k) => (
              <option key={k.kind} value={k.kind}>
                {k.kind} — {k.description}
              </option>
            ))}
          </select>
        </label>
        <label>
          Language
          <select value={locale} onChange={(e) => setLocale(localeOf(e.currentTarget.value))}>
            {Object.entries(LOCALES).map(([v, name]) => (
              <option key={v} value={v}>
                {name}
              </option>
            ))}
          </select>
        </label>
      </div>
      {template && (
        <p class="muted" data-testid="template-state">
          {template.custom
            ? `Your template${template.updated_at ? `, saved ${when(template.updated_at)}` : ''}.`
            : 'The default template.'}
          {spec?.category === 'marketing' && ' Marketing mail: sent only with the member’s consent.'}
        </p>
      )}
      {spec && <Variables spec={spec} locale={locale} />}
      {text && (
        <form onSubmit={save} class="stack template-form">
          <label>
            Subject
            <input
              value={text.subject}
              dir="auto"
              aria-invalid={problems.some((p) => p.field === 'subject')}
              aria-describedby="subject-errors"
              onInput={(e) => setText({ ...text, subject: e.currentTarget.value })}
            />
          </label>
          <FieldProblems id="subject-errors" field="subject" problems={problems} source={text.subject} />
          <label>
            Body
            <textarea
              rows={10}
              dir="auto"
              value={text.body}
              aria-invalid={problems.some((p) => p.field === 'body')}
              aria-describedby="body-errors"
              onInput={(e) => setText({ ...text, body: e.currentTarget.value })}
            />
          </label>
          <FieldProblems id="body-errors" field="body" problems={problems} source={text.body} />
          <div class="filters">
            <button type="submit" class="primary">
              Save template
            </button>
            <button type="button" disabled={!template?.custom} onClick={reset}>
              Reset to default
            </button>
          </div>
        </form>
      )}
      <div aria-live="polite">{outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}</div>
      {preview && (
        <section aria-labelledby="preview-h">
          <h3 id="preview-h">Preview (sample values)</h3>
          <p>
            Subject: <strong data-testid="preview-subject">{preview.subject}</strong>
          </p>
          <iframe title="HTML preview" class="mail-preview" sandbox="" srcdoc={preview.html} />
          <h4>Text part</h4>
          <pre class="mail-text" data-testid="preview-text" dir="auto">
            {preview.text}
          </pre>
        </section>
      )}
    </section>
  );
}

const kindOf = (kinds: Kind[] | undefined, v: string): KindName =>
  kinds?.find((k) => k.kind === v)?.kind ?? 'member_code';

function Variables(props: { spec: Kind; locale: Locale }) {
  return (
    <div class="table-wrap">
      <table>
        <caption>Variables of this message</caption>
        <thead>
          <tr>
            <th scope="col">Variable</th>
            <th scope="col">What it holds</th>
            <th scope="col">Sample</th>
          </tr>
        </thead>
        <tbody>
          {props.spec.variables.map((v) => (
            <tr key={v.name}>
              <td>
                <code>{`{{${v.name}}}`}</code>
              </td>
              <td>{v.description}</td>
              <td dir="auto">{String(v.samples[props.locale])}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A field's errors, each at its line: the line's text with a mark under its column. */
function FieldProblems(props: { id: string; field: Field; problems: Problem[]; source: string }) {
  const mine = props.problems.filter((p) => p.field === props.field);
  const lines = props.source.split('\n');
  return (
    <ul id={props.id} class="template-errors" role={mine.length > 0 ? 'alert' : undefined}>
      {mine.map((p, i) => (
        <li key={i} data-line={p.line}>
          {p.line !== undefined ? `Line ${p.line}${p.column !== undefined ? `, column ${p.column}` : ''}: ` : ''}
          {p.message}
          {p.line !== undefined && lines[p.line - 1] !== undefined && (
            <pre>
              {lines[p.line - 1]}
              {p.column !== undefined && `\n${' '.repeat(Math.max(0, p.column - 1))}^`}
            </pre>
          )}
        </li>
      ))}
    </ul>
  );
}
