// Compiles the mail layouts (MJML) into services/identity/src/mail/render/compiled-layouts.ts:
// `npm run mail:layouts` after changing layoutSource (render/layout.ts); a test fails while the
// file is not what this writes. MJML runs only here, never in the service.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import mjml2html from 'mjml';
import { LAYOUT_SHAPES, layoutKey, layoutSource } from '../src/mail/render/layout.ts';

export const COMPILED_LAYOUTS_FILE = fileURLToPath(new URL('../src/mail/render/compiled-layouts.ts', import.meta.url));

/** The compiled layouts module's text. */
export async function compiledLayoutsModule(): Promise<string> {
  const entries: string[] = [];
  for (const shape of LAYOUT_SHAPES) {
    const r = await mjml2html(layoutSource(shape), { validationLevel: 'strict' });
    if (r.errors.length > 0)
      throw new Error(`mail layout ${layoutKey(shape)}: ${r.errors.map((e) => e.formattedMessage).join('; ')}`);
    entries.push(`  ${JSON.stringify(layoutKey(shape))}: ${JSON.stringify(r.html)},`);
  }
  return `// Written by \`npm run mail:layouts\` (services/identity/scripts/compile-mail-layouts.ts) from
// layoutSource in layout.ts: the MJML layouts compiled to HTML, one per locale, footer and header.
// Do not edit; a test checks this file is what the script writes.
export const compiledLayouts: Record<string, string> = {
${entries.join('\n')}
};
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(COMPILED_LAYOUTS_FILE, await compiledLayoutsModule());
  console.log(`wrote ${COMPILED_LAYOUTS_FILE}`);
}
