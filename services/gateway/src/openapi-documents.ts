import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  buildOpenApiDocument,
  buildOperatorOpenApiDocument,
  buildStaffOpenApiDocument,
  operations,
  operatorOperations,
  staffApiOperations,
} from '@loyalty/contracts';

/**
 * The three OpenAPI documents the gateway serves, generated from the contract tables when the
 * project is built (`scripts/build.mjs` writes them to `services/gateway/dist/openapi/`), so the
 * gateway does not build them at start: turning every contract's zod schemas into JSON Schema
 * raised its resident memory by some 30 MB for good. The server URL is put in when served.
 */
export const DOCUMENTS = {
  api: { build: (url: string) => buildOpenApiDocument(operations, url), json: '/openapi.json', ui: '/docs' },
  admin: {
    build: (url: string) => buildOperatorOpenApiDocument(operatorOperations, url),
    json: '/admin/openapi.json',
    ui: '/admin/docs',
  },
  staff: {
    build: (url: string) => buildStaffOpenApiDocument(staffApiOperations, url),
    json: '/staff/openapi.json',
    ui: '/staff/docs',
  },
} as const;
export type DocumentName = keyof typeof DOCUMENTS;
export const DOCUMENT_NAMES: readonly DocumentName[] = ['api', 'admin', 'staff'];

// Written where the server URL goes, replaced by the gateway's public base URL when served.
const SERVER_URL = 'https://public-base-url.loyalty.invalid';

// dist/main.js and src/openapi-documents.ts are both one folder below the package.
const DIR = fileURLToPath(new URL('../dist/openapi/', import.meta.url));
const fileOf = (name: DocumentName) => `${DIR}${name}.json`;

/** Write the built documents (the build's last step). */
export function writeDocuments(): void {
  mkdirSync(DIR, { recursive: true });
  for (const name of DOCUMENT_NAMES) writeFileSync(fileOf(name), JSON.stringify(DOCUMENTS[name].build(SERVER_URL)));
}

/**
 * A document's JSON for `publicBaseUrl`: the built file, or built here when there is none (the
 * gateway run from its sources before any build).
 */
export function documentJson(name: DocumentName, publicBaseUrl: string): string {
  const file = fileOf(name);
  if (!existsSync(file)) return JSON.stringify(DOCUMENTS[name].build(publicBaseUrl));
  const url = JSON.stringify(publicBaseUrl).slice(1, -1);
  return readFileSync(file, 'utf8').replaceAll(SERVER_URL, () => url);
}
