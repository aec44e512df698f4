import { describe, expect, it } from 'vitest';
import { DOCUMENT_NAMES, DOCUMENTS, documentJson, writeDocuments } from '../src/openapi-documents.ts';

describe('the OpenAPI documents built with the project', () => {
  it('are, once the server URL is put in, the documents the contracts make now', () => {
    writeDocuments(); // as the build does
    const url = 'https://api.example.com/with "quotes"';
    for (const name of DOCUMENT_NAMES) expect(JSON.parse(documentJson(name, url))).toEqual(DOCUMENTS[name].build(url));
  });
});
