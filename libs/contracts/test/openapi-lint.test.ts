import { createConfig, lintFromString } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import {
  buildOpenApiDocument,
  buildOperatorOpenApiDocument,
  buildStaffOpenApiDocument,
  operations,
  operatorOperations,
  staffApiOperations,
} from '../src/index.ts';

/**
 * Redocly's `recommended` ruleset over the three generated documents: no error and no warning, so the
 * reference stays what tools (SDK generators, Swagger UI, Redoc) read without surprises.
 */
describe.each([
  ['merchant', () => buildOpenApiDocument(operations)],
  ['operator', () => buildOperatorOpenApiDocument(operatorOperations)],
  ['staff', () => buildStaffOpenApiDocument(staffApiOperations)],
])('%s document', (_name, build) => {
  it('passes the recommended rules with no problems', async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({
      source: JSON.stringify(build()),
      absoluteRef: 'openapi.json',
      config,
    });
    const summary = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(summary).toEqual([]);
  });
});
