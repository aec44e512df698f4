import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  buildOpenApiDocument,
  buildOperatorOpenApiDocument,
  buildStaffOpenApiDocument,
  operations,
  operatorOperations,
  staffApiOperations,
  successStatus,
  type Operation,
} from '../src/index.ts';

type Json = Record<string, unknown>;
interface Documented {
  requestBody?: { content: { 'application/json': { schema: Json; example?: unknown } } };
  responses: Record<string, { content: Record<'application/json' | '*/*', { schema: Json; example?: unknown }> }>;
}

/** A validator of `schema` whose `#/components/...` references resolve in `doc`. */
function validatorIn(doc: Json) {
  // `components` is not a JSON Schema keyword; not strict, so it can ride along as the refs' root.
  const ajv = new Ajv2020({ strict: false, allErrors: true, multipleOfPrecision: 9 });
  return (schema: Json) => ajv.compile({ ...schema, components: doc.components });
}

describe.each([
  ['merchant', buildOpenApiDocument(operations), operations],
  ['operator', buildOperatorOpenApiDocument(operatorOperations), operatorOperations],
  ['staff', buildStaffOpenApiDocument(staffApiOperations), staffApiOperations],
] as [string, Json, Record<string, Operation>][])('%s document examples', (_name, doc, ops) => {
  const compile = validatorIn(doc);
  const paths = doc.paths as Record<string, Record<string, Documented>>;

  it.each(Object.entries(ops))(
    '%s: a success example (200, or 202 for a queued job) and, when it takes a body, a request example, all valid',
    (id, op) => {
      const documented = paths[op.path.replace(/:([a-z_]+)/g, '{$1}')]![op.method.toLowerCase()]!;
      // A download (a job's result) is documented as any content type, a paged download as its file types.
      const answer = documented.responses[String(successStatus(op))]!;
      const success = op.download
        ? answer.content['*/*']
        : op.pagedDownload
          ? answer.content[op.pagedDownload.contentTypes[0] as 'application/json']
          : answer.content['application/json'];
      expect(success.example, `${id} has a response example`).toBeDefined();
      const checkResponse = compile(success.schema);
      expect(checkResponse(success.example), JSON.stringify(checkResponse.errors)).toBe(true);
      if (op.body) {
        const request = documented.requestBody!.content['application/json'];
        expect(request.example, `${id} has a request example`).toBeDefined();
        const checkRequest = compile(request.schema);
        expect(checkRequest(request.example), JSON.stringify(checkRequest.errors)).toBe(true);
        // The schema is what the server checks too: the example must pass the operation's zod body.
        expect(op.body.safeParse(request.example).success).toBe(true);
      } else expect(op.example?.request).toBeUndefined();
      expect(op.response.safeParse(op.example?.response).success).toBe(true);
    },
  );

  it('rejects a wrong example: the check can fail', () => {
    const earn = Object.values(paths)[0]!;
    const success = Object.values(earn)[0]!.responses['200']!.content['application/json'];
    expect(compile(success.schema)({ success: true, data: { unexpected: 1 } })).toBe(false);
  });
});
