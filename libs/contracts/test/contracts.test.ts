import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, errorCatalogue, operations, operatorOperations, Money } from '../src/index.ts';

describe('contract table', () => {
  it('has unique method + path and unique service operations', () => {
    const all = Object.values({ ...operations, ...operatorOperations });
    const routes = all.map((o) => `${o.method} ${o.path}`);
    expect(new Set(routes).size).toBe(routes.length);
    const subjects = all.map((o) => `${o.service}.${o.operation}`);
    expect(new Set(subjects).size).toBe(subjects.length);
  });

  it('names only catalogued errors', () => {
    for (const op of Object.values({ ...operations, ...operatorOperations })) {
      for (const code of op.errors) expect(errorCatalogue).toHaveProperty(code);
    }
  });

  it('generates an OpenAPI 3.1 document covering every operation', () => {
    const doc = buildOpenApiDocument(operations) as {
      openapi: string;
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    for (const [id, op] of Object.entries(operations)) {
      const path = op.path.replace(/:([a-z_]+)/g, '{$1}');
      expect(doc.paths[path]?.[op.method.toLowerCase()]?.operationId).toBe(id);
    }
  });
});

describe('money', () => {
  it('accepts at most two decimals', () => {
    expect(Money.safeParse(19.99).success).toBe(true);
    expect(Money.safeParse(0.1 + 0.2).success).toBe(true); // 0.30000000000000004 is 0.30 to the cent
    expect(Money.safeParse(1.234).success).toBe(false);
    expect(Money.safeParse(-1).success).toBe(false);
  });
});
