import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands alone and its README stays a guide: a clone anywhere must read whole, with
 * no pointer to files beside the checkout or to a tracker's numbering, and every relative link of
 * its markdown must lead somewhere.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Tracked files (git), or, in an export without git, every file outside what installs and runs write. */
function repositoryFiles(): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '-z'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return out.split('\0').filter((f) => f !== '' && existsSync(path.join(root, f)));
  } catch {
    const skip = new Set(['.git', 'node_modules', 'var', 'dist', 'coverage']);
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        if (skip.has(e.name)) return [];
        const full = path.join(dir, e.name);
        return e.isDirectory() ? walk(full) : [path.relative(root, full)];
      });
    return walk(root);
  }
}

/** Text files only: a NUL byte marks a binary one (images). */
function textFiles(): Array<{ file: string; text: string }> {
  return repositoryFiles().flatMap((file) => {
    const bytes = readFileSync(path.join(root, file));
    return bytes.includes(0) ? [] : [{ file, text: bytes.toString('utf8') }];
  });
}

// Built from parts so that this file does not match its own patterns.
const forbidden: Array<{ what: string; pattern: RegExp }> = [
  { what: 'a path outside the repository', pattern: new RegExp(['\\.\\.', 'shared'].join('/')) },
  { what: "a tracker's issue number", pattern: new RegExp(['\\bissues?', '#?\\d+'].join('\\s+'), 'i') },
  { what: 'a section of an outside design', pattern: new RegExp(['\\bdesign', 'section', '\\d'].join('\\s+'), 'i') },
];

/** Lines of `text` (1-based) where `pattern` matches. */
function matchingLines(text: string, pattern: RegExp): number[] {
  return text.split('\n').flatMap((line, i) => (pattern.test(line) ? [i + 1] : []));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a markdown file offers (repeated headings get -1, -2, ... as on GitHub). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutFences(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = slug(m[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Markdown without fenced blocks, whose lines are neither headings nor links. */
function withoutFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[\s\S]*?^\1\s*$/gm, '');
}

/** Markdown without fenced blocks and inline code, where brackets are not links. */
function withoutCode(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, '');
}

/** Relative links (`[text](target)`, images too) of a markdown file: not URLs, not mail. */
function relativeLinks(markdown: string): string[] {
  return [...withoutCode(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe('documentation conventions', () => {
  it('keeps README.md a guide: at most 300 lines, opening with the two commands', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
    expect(lines, 'README.md is a guide; reference material belongs in docs/').toBeLessThanOrEqual(300);
    const opening = readme.split('\n').slice(0, 15).join('\n');
    expect(opening).toMatch(/^npm start\b/m);
    expect(opening).toMatch(/^npm test\b/m);
  });

  it('mentions no file outside the repository, no issue number and no outside design section', () => {
    const files = textFiles();
    expect(files.length).toBeGreaterThan(50);
    const found = files.flatMap(({ file, text }) =>
      forbidden.flatMap(({ what, pattern }) => matchingLines(text, pattern).map((line) => `${file}:${line}: ${what}`)),
    );
    expect(found).toEqual([]);
  });

  it('has no relative markdown link to a missing file or heading', () => {
    const markdown = repositoryFiles().filter((f) => f.endsWith('.md'));
    expect(markdown).toContain('README.md');
    expect(markdown.some((f) => f.startsWith('docs/'))).toBe(true);
    const broken: string[] = [];
    for (const file of markdown) {
      const text = readFileSync(path.join(root, file), 'utf8');
      for (const target of relativeLinks(text)) {
        const [filePart = '', anchor] = target.split('#');
        const resolved = filePart === '' ? path.join(root, file) : path.resolve(root, path.dirname(file), filePart);
        if (!resolved.startsWith(root) || !existsSync(resolved)) {
          broken.push(`${file}: ${target} (no such file)`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && statSync(resolved).isFile()) {
          if (!anchors(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${file}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds what it looks for (the checks are not vacuous)', () => {
    const [outside, issue, design] = forbidden.map((f) => f.pattern);
    expect(outside?.test(`see ${'..'}/shared/notes.txt`)).toBe(true);
    expect(issue?.test(`as ${'Issue'} 17 decided`)).toBe(true);
    expect(issue?.test('issues are tracked elsewhere')).toBe(false);
    expect(design?.test(`per ${'design'} section 10`)).toBe(true);
    expect(relativeLinks('[a](docs/api.md#errors) [b](https://x.example) `[c](no.md)` ![d](img.png)')).toEqual([
      'docs/api.md#errors',
      'img.png',
    ]);
    expect([
      ...anchors('# API reference\n## Errors and `codes`\n## Errors and codes\n```\n# not a heading\n```'),
    ]).toEqual(['api-reference', 'errors-and-codes', 'errors-and-codes-1']);
  });
});
