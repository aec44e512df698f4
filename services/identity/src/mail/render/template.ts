import Handlebars from 'handlebars';
import { catalog, type MailKindName, type TemplateText } from './catalog.ts';

/**
 * Templates in a small, safe subset of Handlebars (a maintained engine, logic-less but for
 * conditions): `{{variable}}`, `{{#if flag}}…{{else}}…{{/if}}`, `{{#unless flag}}…{{/unless}}` and
 * `{{! comments }}`, nothing else: no triple braces, partials, other helpers, paths (`a.b`,
 * `../`, `@data`) or parameters. Every variable must be one the kind lists, so a template saved
 * through the operator API or the console never names an unknown one (checked at save, with the
 * place of each error). Templates render to text; the HTML part escapes that text as a whole
 * (layout.ts), so whatever a member or staff user typed is always escaped there.
 */
export const SUBJECT_MAX = 200;
export const BODY_MAX = 5_000;

export interface TemplateError {
  field: 'subject' | 'body';
  message: string;
  /** Where in the field (1-based), when the error is at a place. */
  line?: number;
  column?: number;
}

const env = Handlebars.create();

/**
 * Handlebars' parser throws its syntax errors with the place only in the message's text: its
 * `parseError` hook (not in the engine's typings) keeps the place (`loc`) on the error.
 */
const parser: unknown = Reflect.get(Handlebars, 'Parser');
if (typeof parser === 'object' && parser !== null)
  Reflect.set(parser, 'parseError', (message: string, hash: unknown) => {
    const loc: unknown = typeof hash === 'object' && hash !== null ? Reflect.get(hash, 'loc') : undefined;
    throw Object.assign(new Error(message), { loc });
  });

/** Where a parse error is (1-based), from the kept `loc` or a Handlebars exception's own place. */
function placeOf(err: unknown): { line?: number; column?: number } {
  if (!(err instanceof Error)) return {};
  const loc: unknown = Reflect.get(err, 'loc');
  if (typeof loc === 'object' && loc !== null) {
    const line: unknown = Reflect.get(loc, 'first_line');
    const column: unknown = Reflect.get(loc, 'first_column');
    if (typeof line === 'number' && typeof column === 'number') return { line, column: column + 1 };
  }
  const line: unknown = Reflect.get(err, 'lineNumber');
  const column: unknown = Reflect.get(err, 'column');
  return typeof line === 'number' ? { line, column: (typeof column === 'number' ? column : 0) + 1 } : {};
}

const BLOCK_HELPERS = new Set(['if', 'unless']);

type Node = hbs.AST.Node;

// Handlebars' node types are not a discriminated union: these guards narrow by `type`.
const isPath = (n: Node): n is hbs.AST.PathExpression => n.type === 'PathExpression';
const isProgram = (n: Node): n is hbs.AST.Program => n.type === 'Program';
const isMustache = (n: Node): n is hbs.AST.MustacheStatement => n.type === 'MustacheStatement';
const isBlock = (n: Node): n is hbs.AST.BlockStatement => n.type === 'BlockStatement';

function walk(
  node: Node,
  allowed: Record<string, string>,
  field: TemplateError['field'],
  errors: TemplateError[],
): void {
  const at = (n: Node) => (n.loc ? ` (line ${n.loc.start.line}, column ${n.loc.start.column + 1})` : '');
  const place = (n: Node) => (n.loc ? { line: n.loc.start.line, column: n.loc.start.column + 1 } : {});
  const variable = (p: hbs.AST.Expression | undefined, where: Node): void => {
    if (!p || !isPath(p)) {
      errors.push({ field, message: `only variable names may be used${at(where)}`, ...place(where) });
      return;
    }
    const [name] = p.parts;
    if (p.data || p.depth > 0 || p.parts.length !== 1 || name === undefined || p.original.includes('this')) {
      errors.push({ field, message: `"${p.original}" is not a variable name${at(where)}`, ...place(where) });
      return;
    }
    if (!Object.hasOwn(allowed, name))
      errors.push({
        field,
        message: `unknown variable "${name}"${at(where)}; known: ${Object.keys(allowed).join(', ')}`,
        ...place(where),
      });
  };
  if (isProgram(node)) {
    for (const s of node.body) walk(s, allowed, field, errors);
    return;
  }
  if (node.type === 'ContentStatement' || node.type === 'CommentStatement') return;
  if (isMustache(node)) {
    if (!node.escaped) errors.push({ field, message: `triple braces are not allowed${at(node)}`, ...place(node) });
    if (node.params.length > 0 || (node.hash && node.hash.pairs.length > 0))
      errors.push({ field, message: `helpers and parameters are not allowed${at(node)}`, ...place(node) });
    else variable(node.path, node);
    return;
  }
  if (isBlock(node)) {
    const helper = isPath(node.path) ? node.path.original : '';
    if (!BLOCK_HELPERS.has(helper) || node.params.length !== 1 || (node.hash && node.hash.pairs.length > 0)) {
      errors.push({
        field,
        message: `only {{#if variable}} and {{#unless variable}} blocks are allowed${at(node)}`,
        ...place(node),
      });
      return;
    }
    variable(node.params[0], node);
    if (node.program) walk(node.program, allowed, field, errors);
    if (node.inverse) walk(node.inverse, allowed, field, errors);
    return;
  }
  errors.push({
    field,
    message: `${node.type.replace(/Statement$/, '').toLowerCase()} is not allowed${at(node)}`,
    ...place(node),
  });
}

function check(source: string, max: number, allowed: Record<string, string>, field: TemplateError['field']) {
  const errors: TemplateError[] = [];
  if (source.trim() === '') return [{ field, message: 'must not be empty' }];
  if (Array.from(source).length > max) return [{ field, message: `at most ${max} characters` }];
  let ast: hbs.AST.Program;
  try {
    ast = env.parse(source);
  } catch (err) {
    // Handlebars' parse errors name the line and what was expected; the place is kept above.
    const lines = err instanceof Error ? err.message.split('\n') : [];
    const expected = lines.find((l) => l.startsWith('Expecting '));
    const first = (lines[0] ?? 'syntax error').replace(/^Parse error on /, 'syntax error on ').replace(/:$/, '');
    const message = `${first}${expected ? `: ${expected.replace(/^Expecting /, 'expected ')}` : ''}`;
    const place = placeOf(err);
    return [{ field, message, ...place }];
  }
  walk(ast, allowed, field, errors);
  return errors;
}

/** What is wrong with a template of `kind` (an empty list: it may be saved). */
export function validateTemplate(kind: MailKindName, t: TemplateText): TemplateError[] {
  const allowed = catalog[kind].variables;
  const errors = [...check(t.subject, SUBJECT_MAX, allowed, 'subject'), ...check(t.body, BODY_MAX, allowed, 'body')];
  if (/[\r\n]/.test(t.subject)) errors.push({ field: 'subject', message: 'must be one line' });
  return errors;
}

export type Vars = Record<string, string | boolean>;
type Compiled = (vars: Vars) => string;

const compiled = new Map<string, Compiled>();
const COMPILED_MAX = 2_000;

/** A template's text compiled once (kept while fewer than COMPILED_MAX are). Only validated templates reach it. */
export function compile(source: string): Compiled {
  let fn = compiled.get(source);
  if (!fn) {
    const template = env.compile(source, {
      noEscape: true,
      strict: false,
      knownHelpers: { if: true, unless: true },
      knownHelpersOnly: true,
    });
    fn = (vars) => template(vars);
    if (compiled.size >= COMPILED_MAX) compiled.clear();
    compiled.set(source, fn);
  }
  return fn;
}
