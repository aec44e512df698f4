import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import {
  buildOpenApiDocument,
  buildOperatorOpenApiDocument,
  buildStaffOpenApiDocument,
  operations,
  operatorOperations,
  staffApiOperations,
} from '@loyalty/contracts';

type Json = Record<string, unknown>;
interface DocumentedResponse {
  $ref?: string;
  content?: { 'application/json'?: { schema: Json } };
}
interface Documented {
  operationId: string;
  responses: Record<string, DocumentedResponse>;
}

/** A response object, or the shared one (`components.responses`) it refers to. */
export function resolveResponse(doc: Json, response: DocumentedResponse | undefined): DocumentedResponse | undefined {
  const name = response?.$ref?.replace('#/components/responses/', '');
  if (name === undefined) return response;
  const shared = (doc.components as { responses?: Record<string, DocumentedResponse> } | undefined)?.responses;
  return shared?.[name];
}
interface Route {
  method: string;
  pattern: RegExp;
  documented: Documented;
  doc: Json;
}

/**
 * Contract testing: every response the e2e tests receive through `apiClient`, `staffClient` and
 * `sys.admin` is checked against the OpenAPI document (merchant, operator or staff) for its operation and status, so the
 * reference cannot drift from what the server answers. A response of a route no operation has
 * (unknown paths, other methods) is not an operation's response and is not checked here.
 */
const routes: Route[] = [];
for (const doc of [
  buildOpenApiDocument(operations),
  buildOperatorOpenApiDocument(operatorOperations),
  buildStaffOpenApiDocument(staffApiOperations),
]) {
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, Documented>>)) {
    const pattern = new RegExp(`^${path.replace(/\{[a-z_]+\}/g, '[^/]+')}/?$`);
    for (const [method, documented] of Object.entries(methods))
      routes.push({ method: method.toUpperCase(), pattern, documented, doc });
  }
}

// `components` is not a JSON Schema keyword; not strict, so it rides along as the refs' root.
const ajv = new Ajv2020({ strict: false, allErrors: true, multipleOfPrecision: 9 });
const compiled = new Map<string, ValidateFunction>();

/** Throws when `body` is not what the document says `method path` answers with `status`. */
export function checkResponse(method: string, url: string, status: number, body: unknown): void {
  const path = url.split('?')[0]!;
  const route = routes.find((r) => r.method === method.toUpperCase() && r.pattern.test(path));
  if (!route) return;
  const id = route.documented.operationId;
  const key = `${id} ${status}`;
  let validate = compiled.get(key);
  if (!validate) {
    const schema = resolveResponse(route.doc, route.documented.responses[String(status)])?.content?.['application/json']
      ?.schema;
    if (!schema)
      throw new Error(
        `contract: ${id} answered ${status}, which its document does not declare: ${JSON.stringify(body)}`,
      );
    validate = ajv.compile({ ...schema, components: route.doc.components });
    compiled.set(key, validate);
  }
  if (!validate(body))
    throw new Error(
      `contract: ${id} answered ${status} not as documented: ${JSON.stringify(validate.errors)} in ${JSON.stringify(body)}`,
    );
}
