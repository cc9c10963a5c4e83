// Every ```json block of the docs and the README is marked (docs/examples.md): a config or a
// fragment of one is validated whole and its streams come up running (`pause` defaults to
// true); a block marked not-config must still be JSON.
import t from 'tap';
import { loadConfigText } from '../../src/config/store.ts';
import { allExamples, CONFIG_KINDS, type ConfigKind, configOf } from './examples.ts';

const json = allExamples().filter((e) => e.lang === 'json');
t.ok(json.length >= 15, `${json.length} json examples found`);

for (const e of json) {
  t.test(`${e.where} (${e.kind ?? 'no marker'})`, async (t) => {
    if (!e.kind) {
      return t.fail(
        `no marker before the block: put <!-- example: config|stream|input|output --> or ` +
          `<!-- example: not-config — what it is --> on the line before the fence (docs/examples.md)`,
      );
    }
    if (e.kind === 'not-config') {
      t.ok(e.note.length > 0, 'says what the block is instead');
      t.doesNotThrow(() => JSON.parse(e.body), 'is JSON');
      return;
    }
    if (!CONFIG_KINDS.includes(e.kind as ConfigKind))
      return t.fail(`a json block cannot be ${e.kind}`);
    const doc = configOf(e.kind as ConfigKind, e.body);
    const loaded = loadConfigText(JSON.stringify(doc, null, 2), { source: e.where });
    t.same(
      loaded.warnings.map((w) => `${w.pointer}: ${w.message}`),
      [],
      'valid without warnings',
    );
    // Streams and tuner adapters default to paused (spec 1): an example that runs says so.
    for (const [id, r] of loaded.desired.resources) {
      if ('pause' in r.spec)
        t.equal(r.spec['pause'], false, `${id} (${r.name}) runs: "pause": false`);
    }
  });
}
