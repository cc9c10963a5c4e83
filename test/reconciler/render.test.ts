// Golden-text tests of the plan renderers. Regenerate the golden files after an intended
// change with `UPDATE_GOLDEN=1 npx tap test/reconciler/render.test.ts` and review the diff.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { plan } from '../../src/reconciler/plan.ts';
import { planToJson, renderPlanJson, renderPlanText } from '../../src/reconciler/render.ts';
import { actualOf, desired, fakeRules, res, stream } from '../helpers/desired.ts';

const GOLDEN = join(dirname(fileURLToPath(import.meta.url)), 'golden');

function golden(t: Test, name: string, actual: string): void {
  const file = join(GOLDEN, name);
  if (process.env['UPDATE_GOLDEN']) writeFileSync(file, actual);
  t.equal(actual, readFileSync(file, 'utf8'), name);
}

const udp = (port: number) => ({ type: 'udp', address: '239.1.1.1', port });
const storage = (dir: string) =>
  res({
    kind: 'storage',
    key: '1',
    name: 'main',
    pointer: '/dvr-storage-list/storage/0',
    spec: { id: 1, name: 'main', 'dir-path': dir },
  });
const user = (password: string) =>
  res({ kind: 'user', key: 'bob', name: 'bob', spec: { login: 'bob', password, role: 'viewer' } });

const before = [
  stream(3, 'news', { input: [udp(5000), udp(5001)] }),
  stream(4, 'old'),
  stream(5, 'mux'),
  user('old-secret'),
  res({ kind: 'http-server', key: 'http-server', spec: { port: 43971 } }),
];
const after = [
  stream(3, 'news', { 'stream-timeout': 5000000, input: [udp(5000), udp(6001)] }),
  stream(5, 'mux', { mpts: true }),
  stream(6, 'sport', { input: [{ type: 'srt', port: 9000, passphrase: 'hunter22' }] }),
  stream(7, 'extra', { input: [udp(1)] }),
  user('new-secret'),
  res({ kind: 'http-server', key: 'http-server', spec: { port: 8080 } }),
];

t.test('mixed plan renders as the golden text', async (t) => {
  const next = structuredClone(after);
  // An input added to an existing stream, carrying a secret.
  next[3] = stream(7, 'extra', {
    input: [udp(1), { type: 'srt', port: 9001, passphrase: 'topsecret' }],
  });
  const p = plan(
    desired(next),
    actualOf([...before, stream(7, 'extra', { input: [udp(1)] })]),
    fakeRules,
  );
  const text = renderPlanText(p);
  golden(t, 'mixed.txt', text);
  t.notMatch(text, /hunter22|topsecret|old-secret|new-secret/, 'no secret in the text');
  const json = renderPlanJson(p);
  golden(t, 'mixed-json.txt', json);
  t.notMatch(json, /hunter22|topsecret|old-secret|new-secret/, 'no secret in the JSON');
  t.same(planToJson(p)['summary'], { add: 1, change: 4, replace: 1, destroy: 1, unchanged: 0 });
});

t.test('no changes', async (t) => {
  const p = plan(desired(before), actualOf(before), fakeRules);
  golden(t, 'empty.txt', renderPlanText(p));
  t.match(planToJson(p), { changed: false, valid: true, changes: [] });
});

t.test('a fixed field is listed as an error and nothing is applied', async (t) => {
  const p = plan(desired([storage('/mnt/b')]), actualOf([storage('/mnt/a')]), fakeRules);
  golden(t, 'fixed.txt', renderPlanText(p));
  t.match(planToJson(p), { valid: false, errors: [{ rule: 'fixed' }] });
});

t.test('color adds ANSI codes only when asked', async (t) => {
  const p = plan(desired(after), actualOf(before), fakeRules);
  t.notMatch(renderPlanText(p), '\x1b[');
  const colored = renderPlanText(p, { color: true });
  t.match(colored, '\x1b[32m+\x1b[0m');
  t.equal(colored.replace(/\x1b\[\d+m/g, ''), renderPlanText(p), 'same text without codes');
});
