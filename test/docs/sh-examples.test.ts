// Every ```sh block of the docs and the README is marked (docs/examples.md): a `run` block is
// run as written against a real server on loopback and must succeed (and feed its streams,
// when the config above it has some); a `not-run` block says why it cannot run here.
import t from 'tap';
import { allExamples } from './examples.ts';
import { runExample } from './run.ts';

const sh = allExamples().filter((e) => e.lang === 'sh');
t.ok(
  sh.some((e) => e.kind === 'run'),
  `${sh.length} sh examples found, some run`,
);

for (const e of sh) {
  t.test(`${e.where} (${e.kind ?? 'no marker'})`, async (t) => {
    if (e.kind === 'not-run') return t.ok(e.note.length > 0, `not run: ${e.note}`);
    if (e.kind !== 'run') {
      return t.fail(
        'put <!-- example: run --> or <!-- example: not-run — why --> on the line before the fence',
      );
    }
    const ran = await runExample(t, e);
    if (ran.hasStreams) {
      return t.ok(
        ran.streamsRan,
        `the streams above run on what it sends; its output:\n${ran.output}`,
      );
    }
    t.equal(ran.code, 0, `exits 0; its output:\n${ran.output}`);
  });
}
