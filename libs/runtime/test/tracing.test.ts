import { describe, expect, it } from 'vitest';
import {
  contextOf,
  inSpan,
  linkTo,
  samplingRatio,
  startTracing,
  traceIds,
  traceparentOf,
  tracingOn,
} from '../src/index.ts';

describe('tracing', () => {
  it('stays off without an OTLP endpoint: no spans, no context, the plain call', async () => {
    expect((await startTracing('test', {})).enabled).toBe(false);
    expect((await startTracing('test', { OTEL_EXPORTER_OTLP_ENDPOINT: '' })).enabled).toBe(false);
    expect(
      (await startTracing('test', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' }))
        .enabled,
    ).toBe(false);
    expect(tracingOn()).toBe(false);
    expect(await inSpan('x', {}, async (span) => span)).toBeUndefined();
    expect(traceparentOf()).toBeUndefined();
    expect(traceIds()).toBeUndefined();
    expect(linkTo('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toEqual([]);
    expect(contextOf('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toBeDefined();
  });

  it('reads the sampling ratio, keeping every trace when it is missing or not a ratio', () => {
    expect(samplingRatio(undefined)).toBe(1);
    expect(samplingRatio('')).toBe(1);
    expect(samplingRatio('0.1')).toBe(0.1);
    expect(samplingRatio('0')).toBe(0);
    expect(samplingRatio('1.5')).toBe(1);
    expect(samplingRatio('often')).toBe(1);
  });
});
