// docs/config.md is generated from the schemas: fail while it is stale.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { DOC_PATH, MARKER, renderConfigDoc } from '../../scripts/gen-config-doc.ts';

t.test('docs/config.md is current (run: npx tsx scripts/gen-config-doc.ts)', async (t) => {
  const text = readFileSync(DOC_PATH, 'utf8');
  t.ok(text.includes(MARKER), 'has the generated part');
  t.equal(text, renderConfigDoc(text));
  t.match(
    text.slice(0, text.indexOf(MARKER)),
    /## Decisions where the spec is silent/,
    'preamble kept',
  );
});

t.test('every field of the reference names its apply class and meaning', async (t) => {
  const text = readFileSync(DOC_PATH, 'utf8');
  const rows = text
    .slice(text.indexOf(MARKER))
    .split('\n')
    .filter((l) => l.startsWith('| `'));
  t.ok(rows.length > 300, `${rows.length} fields documented`);
  for (const row of rows) {
    const cells = row.split(/(?<!\\)\|/).map((c) => c.trim());
    t.match(cells[5], /^(hot|restart|replace|fixed)$/, row.slice(0, 40));
    t.ok((cells[6] ?? '').length > 2, `meaning given: ${row.slice(0, 40)}`);
  }
});
