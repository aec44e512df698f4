import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';

/**
 * Distributed tracing (OpenTelemetry), off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set. When off,
 * nothing here allocates a span, installs a context manager or touches a header: every helper
 * falls through to the plain call, so the hot path pays one boolean test.
 *
 * When on, each process exports its spans over OTLP/HTTP (JSON) to `<endpoint>/v1/traces`
 * (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given), sampled parent-based: a request that arrives
 * with a sampled `traceparent` is traced, a new trace is kept with probability
 * `OTEL_TRACES_SAMPLER_ARG` (default 1). Context crosses processes as W3C `traceparent`: in HTTP
 * headers at the gateway, in NATS message headers for requests and events, and in a column where an
 * event or a webhook delivery waits in a table (the outbox, webhooks.events).
 */

export { SpanKind };
export type { Context, Span };

let tracer: Tracer | undefined;
let provider: BasicTracerProvider | undefined;
let asyncContext = false;

export const TRACEPARENT = 'traceparent';

/** Whether this process records spans. */
export function tracingOn(): boolean {
  return tracer !== undefined;
}

/**
 * Start tracing for this process when the environment asks for it; the answer stops it (flushing
 * the spans not yet exported). Idempotent: a second call (tests start several services in one
 * process) keeps the first provider. The SDK (provider, exporter, context manager: some 9 MB of
 * resident memory) is loaded only here, when tracing is on; a process with tracing off loads only
 * the small `@opentelemetry/api`.
 */
export async function startTracing(
  service: string,
  env: Record<string, string | undefined> = process.env,
  opts: {
    /**
     * Whether the process keeps an active span across awaits (an AsyncLocalStorage context
     * manager). A process that hands its spans to every call by hand (the gateway) needs none, and
     * on Node 20 an AsyncLocalStorage, once used, puts a hook on every promise of the process.
     */
    asyncContext?: boolean;
  } = {},
): Promise<{ enabled: boolean; stop(): Promise<void> }> {
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : '');
  if (!url || env.OTEL_SDK_DISABLED === 'true') return { enabled: false, stop: async () => undefined };
  const [
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler },
  ] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  if (provider === undefined) {
    const ratio = samplingRatio(env.OTEL_TRACES_SAMPLER_ARG);
    provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || `loyalty-${service}` }),
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: 1_000 })],
    });
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    tracer = provider.getTracer('loyalty');
  }
  // Several services in one process (tests): one of them asking for it is enough.
  if (opts.asyncContext !== false && !asyncContext) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    asyncContext = true;
  }
  return { enabled: true, stop: flushTraces };
}

/** Export the spans not yet exported (at shutdown); nothing when tracing is off. */
export async function flushTraces(): Promise<void> {
  await provider?.forceFlush().catch(() => undefined);
}

/** `OTEL_TRACES_SAMPLER_ARG`: a ratio in [0, 1]; anything else keeps every new trace. */
export function samplingRatio(arg: string | undefined): number {
  const n = arg === undefined || arg.trim() === '' ? 1 : Number(arg);
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : 1;
}

/** The `traceparent` of a context (the active one by default), when it holds a span. */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  if (!tracer) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier[TRACEPARENT];
}

/** The context a `traceparent` names (the root context when there is none or it is malformed). */
export function contextOf(traceparent: string | undefined | null): Context {
  if (!tracer || !traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { [TRACEPARENT]: traceparent });
}

/** A link to the span a `traceparent` names, if any. */
export function linkTo(traceparent: string | undefined | null): Link[] {
  if (!tracer || !traceparent) return [];
  const span = trace.getSpanContext(contextOf(traceparent));
  return span ? [{ context: span }] : [];
}

/** The active span's ids, for log lines. */
export function traceIds(): { trace_id: string; span_id: string } | undefined {
  if (!tracer) return undefined;
  const s = trace.getSpanContext(context.active());
  return s ? { trace_id: s.traceId, span_id: s.spanId } : undefined;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent (the active context by default). */
  parent?: Context;
  links?: Link[];
}

/**
 * Run `fn` in a new span (a child of `parent` or of the active span) that ends when it settles; a
 * throw marks the span as an error. With tracing off, `fn(undefined)` and nothing else.
 */
export async function inSpan<T>(
  name: string,
  opts: SpanOptions,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracer) return fn(undefined);
  const parent = opts.parent ?? context.active();
  // Inside a trace the sampler left out, a child would be left out too: skip making it (the
  // context, and so the `traceparent` passed on, stays the unsampled parent's).
  const above = trace.getSpan(parent);
  if (above && !sampled(above)) return opts.parent ? context.with(parent, () => fn(undefined)) : fn(undefined);
  const span = tracer.startSpan(name, { kind: opts.kind, attributes: opts.attributes, links: opts.links }, parent);
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Start a span by hand (ended by the caller), e.g. one that spans several hooks of a request. */
export function startSpan(name: string, opts: SpanOptions): Span | undefined {
  if (!tracer) return undefined;
  return tracer.startSpan(
    name,
    { kind: opts.kind, attributes: opts.attributes, links: opts.links },
    opts.parent ?? context.active(),
  );
}

/**
 * A span made a child of `parent` by hand, no context entered: for a process that passes its spans
 * explicitly (the gateway hands each call its request's span) and so never installs an async
 * context. Undefined when tracing is off, there is no parent, or its trace is not sampled.
 */
export function childSpan(
  parent: Span | undefined,
  name: string,
  opts: Omit<SpanOptions, 'parent'> = {},
): Span | undefined {
  if (!tracer || !parent || !sampled(parent)) return undefined;
  return tracer.startSpan(
    name,
    { kind: opts.kind, attributes: opts.attributes, links: opts.links },
    trace.setSpan(ROOT_CONTEXT, parent),
  );
}

/** Run `fn` in a {@link childSpan} of `parent`, ended when `fn` settles (a throw marks it failed); no context entered. */
export async function inChildSpan<T>(
  parent: Span | undefined,
  name: string,
  opts: Omit<SpanOptions, 'parent'>,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const span = childSpan(parent, name, opts);
  if (!span) return fn(undefined);
  try {
    return await fn(span);
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

/** Run `fn` with `span` as the active span (as it is, when tracing is off or there is no span). */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  if (!tracer || !span) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** The active span, if any (always undefined with tracing off). */
export function activeSpan(): Span | undefined {
  return tracer ? trace.getSpan(context.active()) : undefined;
}

/** The active span when its trace is sampled, else undefined. */
export function recordingSpan(): Span | undefined {
  const span = activeSpan();
  return span && sampled(span) ? span : undefined;
}

/** Whether a span's trace is sampled (a remote parent, extracted from a header, is never "recording"). */
export function sampled(span: Span): boolean {
  return (span.spanContext().traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
}

/** The `traceparent` naming `span` itself (a response header that tells a client its trace). */
export function traceparentOfSpan(span: Span): string {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-0${(c.traceFlags & 1).toString(16)}`;
}

/** Mark a span as failed. */
export function failSpan(span: Span | undefined, message: string): void {
  span?.setStatus({ code: SpanStatusCode.ERROR, message });
}
