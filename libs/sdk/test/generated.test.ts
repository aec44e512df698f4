import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateSdkSchema, schemaFile } from '../../../scripts/generate-sdk.ts';

describe('libs/sdk/src/schema.ts', () => {
  it('is what the current contracts generate', async () => {
    const fresh = await generateSdkSchema();
    const checkedIn = readFileSync(schemaFile, 'utf8');
    expect(
      checkedIn === fresh,
      'libs/sdk/src/schema.ts is stale: the contracts changed since it was generated; run npm run sdk:generate',
    ).toBe(true);
  });
});
