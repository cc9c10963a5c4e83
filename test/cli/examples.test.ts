// Every config under examples/ is valid, warning-free and already in minimal form, so what
// the README runs is what `sluice validate` and `sluice fmt --check` accept.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { elideDefaults, formatConfig, loadConfigText } from '../../src/config/store.ts';
import { REPO_ROOT } from '../helpers/server.ts';

const dir = path.join(REPO_ROOT, 'examples');
const files = (await readdir(dir)).filter((f) => f.endsWith('.json'));

t.ok(files.includes('config.json'), 'the README example exists');
for (const f of files) {
  t.test(f, async (t) => {
    const text = await readFile(path.join(dir, f), 'utf8');
    const loaded = loadConfigText(text, { source: f });
    t.same(loaded.warnings, [], 'no warnings');
    t.equal(formatConfig(elideDefaults(loaded.doc)), text, 'minimal form');
  });
}
