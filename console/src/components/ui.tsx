import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Pagination } from '../api.ts';

/** A date and time as staff read it (the browser's locale and time zone). */
export const when = (iso: string) =>
  new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export const money = (amount: number, currency: string) =>
  new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);

export const points = (n: number) => `${new Intl.NumberFormat().format(n)} points`;

/** What a failure says to a person: the server's message, with its code for support. */
export function problemText(err: unknown): string {
  if (err instanceof ApiError) return `${err.message} (${err.code})`;
  return 'Something went wrong.';
}

/** An outcome line: `role=status` for a success (read politely), `role=alert` for a failure. */
export function Notice(props: { kind: 'ok' | 'error'; children: ComponentChildren }) {
  return (
    <p class={`notice notice-${props.kind}`} role={props.kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </p>
  );
}

/** Loads with `load` now and whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const seq = useRef(0);
  const reload = useCallback(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === seq.current && setState({ data, loading: false }),
      (error: unknown) => mine === seq.current && setState({ error, loading: false }),
    );
  }, deps);
  useEffect(reload, [reload]);
  return { ...state, reload };
}

export function Pager(props: { page: Pagination; onPage: (offset: number) => void; label: string }) {
  const { limit, offset, total, has_more } = props.page;
  const first = total === 0 ? 0 : offset + 1;
  const last = Math.min(offset + limit, total);
  return (
    <nav class="pager" aria-label={props.label}>
      <button type="button" disabled={offset === 0} onClick={() => props.onPage(Math.max(0, offset - limit))}>
        Previous
      </button>
      <span>
        {first}–{last} of {total}
      </span>
      <button type="button" disabled={!has_more} onClick={() => props.onPage(offset + limit)}>
        Next
      </button>
    </nav>
  );
}

/** The page's heading takes the focus when the page opens, so keyboard and screen reader users land on it. */
export function PageTitle(props: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <h1 tabIndex={-1} ref={ref}>
      {props.children}
    </h1>
  );
}
