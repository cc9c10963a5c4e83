// /config routes against the real ConfigService writing a real file (validation, minimal form,
// atomic write) and the real planner: one-line edits, concurrent edits, If-Match, errors.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { buildApp } from '../../../src/api/app.ts';
import type { DesiredSink } from '../../../src/config/service.ts';
import { ConfigServiceImpl } from '../../../src/config/service.ts';
import { fieldRules, formatConfig, loadConfigText } from '../../../src/config/store.ts';
import type { DesiredState, Resource } from '../../../src/config/types.ts';
import { FilePersister } from '../../../src/config/watch.ts';
import { silentLogger } from '../../../src/log.ts';
import { plan } from '../../../src/reconciler/plan.ts';
import { fakeContext } from '../../helpers/api-context.ts';
import { tempDir } from '../../helpers/server.ts';

/** A loop that plans for real and takes every submitted state as applied. */
class PlanningSink implements DesiredSink {
  actual = new Map<string, Resource>();
  submitted = 0;
  plan(desired: DesiredState) {
    return plan(desired, this.actual, fieldRules);
  }
  submit(desired: DesiredState) {
    this.actual = new Map(desired.resources);
    this.submitted++;
  }
  reportInvalid() {}
}

async function setup(t: Test, doc: Record<string, unknown>) {
  const dir = await tempDir(t, 'sluice-api-');
  const file = path.join(dir, 'config.json');
  const text = formatConfig(doc);
  await writeFile(file, text);
  const sink = new PlanningSink();
  const service = new ConfigServiceImpl({
    loop: sink,
    persister: new FilePersister(file),
    log: silentLogger,
    source: file,
    info: () => ({ type: 'file', path: file }),
  });
  t.equal(await service.refresh(async () => ({ text, origin: 'file' })), 'applied');
  await service.idle();
  const app = await buildApp(
    fakeContext({
      config: service,
      planFor: (d) => sink.plan(loadConfigText(formatConfig(d)).desired),
    }),
  );
  t.teardown(() => app.close());
  return { app, file, service, sink };
}

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json', ...headers },
});

function changedLines(a: string, b: string): string[] {
  const x = a.split('\n');
  const y = b.split('\n');
  const out: string[] = [];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] !== y[i]) out.push(`${x[i]} -> ${y[i]}`);
  }
  return out;
}

const STREAMS = Array.from({ length: 100 }, (_, i) => ({
  id: i + 1,
  'stream-name': `ch${i + 1}`,
  input: [{ type: 'udp', address: '239.1.1.1', port: 5000 + i }],
}));

t.test('a PATCH of one field changes exactly that line; back to default removes it', async (t) => {
  const streams = STREAMS.slice(0, 3).map((s) => ({ ...s, 'display-name': `old ${s.id}` }));
  const { app, file } = await setup(t, { stream: streams });
  const before = await readFile(file, 'utf8');
  const r = await app.inject({
    method: 'PATCH',
    url: '/config/stream/2',
    ...json({ 'display-name': 'new 2' }),
  });
  t.equal(r.statusCode, 200, r.body);
  const after = await readFile(file, 'utf8');
  const changed = changedLines(before, after);
  t.equal(changed.length, 1, 'exactly one line differs');
  t.match(changed[0], /"display-name": "old 2".* -> .*"display-name": "new 2"/);
  const body = r.json();
  t.equal(r.headers.etag, body.etag);
  t.match(body.plan, {
    format: 'sluice-plan/1',
    summary: { change: 1, add: 0, destroy: 0 },
    changes: [
      {
        kind: 'stream',
        key: '2',
        action: 'update',
        fields: [{ path: 'display-name', after: 'new 2' }],
      },
    ],
  });

  // A new member adds its line (JSON puts a comma on the line before it)...
  const off = await app.inject({
    method: 'PATCH',
    url: '/config/stream/2',
    ...json({ pause: false }),
  });
  t.equal(off.statusCode, 200);
  const paused = await readFile(file, 'utf8');
  t.equal(paused.split('\n').length, after.split('\n').length + 1, 'one line added');
  t.match(paused, /"pause": false/);
  // ...and setting it back to its default (pause: true) removes it again.
  const back = await app.inject({
    method: 'PATCH',
    url: '/config/stream/2',
    ...json({ pause: true }),
  });
  t.equal(back.statusCode, 200);
  t.equal(await readFile(file, 'utf8'), after, 'file back to the same bytes');
});

t.test('100 concurrent PATCHes to different streams all persist', async (t) => {
  const { app, file, service } = await setup(t, { stream: STREAMS });
  const answers = await Promise.all(
    STREAMS.map((s) =>
      app.inject({
        method: 'PATCH',
        url: `/config/stream/${s.id}`,
        ...json({ 'display-name': `Channel ${s.id}` }),
      }),
    ),
  );
  t.same(
    answers.filter((r) => r.statusCode !== 200).map((r) => r.body),
    [],
  );
  const onDisk = JSON.parse(await readFile(file, 'utf8')) as { stream: Record<string, unknown>[] };
  t.same(
    onDisk.stream.map((s) => s['display-name']),
    STREAMS.map((s) => `Channel ${s.id}`),
  );
  t.equal((await app.inject({ url: '/config' })).headers.etag, service.current().etag);
});

t.test('stale If-Match gets 412 and writes nothing', async (t) => {
  const { app, file } = await setup(t, { stream: STREAMS.slice(0, 2) });
  const etag = (await app.inject({ url: '/config/stream/1' })).headers.etag as string;
  const first = await app.inject({
    method: 'PATCH',
    url: '/config/stream/1',
    ...json({ 'display-name': 'A' }, { 'if-match': etag }),
  });
  t.equal(first.statusCode, 200);
  const text = await readFile(file, 'utf8');
  const stale = await app.inject({
    method: 'PATCH',
    url: '/config/stream/2',
    ...json({ 'display-name': 'B' }, { 'if-match': etag }),
  });
  t.equal(stale.statusCode, 412);
  t.equal(stale.json().status, 412);
  t.equal(await readFile(file, 'utf8'), text);
});

t.test('an invalid edit is 400 listing every error, and the file is untouched', async (t) => {
  const { app, file, sink } = await setup(t, { stream: STREAMS.slice(0, 2) });
  const text = await readFile(file, 'utf8');
  const submitted = sink.submitted;
  const r = await app.inject({
    method: 'PATCH',
    url: '/config',
    ...json({
      stream: [
        { id: 1, 'stream-name': 'ch1', pause: 'yes' },
        { id: 2, 'stream-name': '' },
      ],
      'dvr-storage-list': { storage: [{ id: 1, name: 's', 'dir-path': '/x', 'max-usage': 200 }] },
      bogus: 1,
    }),
  });
  t.equal(r.statusCode, 400);
  const body = r.json();
  t.equal(body.status, 400);
  // Nothing was written, so the message must not send the reader to lines of the file on disk.
  t.match(body.message, /^the edit would leave the config with 4 errors: .*\/stream\/0\/pause: /);
  t.notMatch(body.message, file, 'no file:line of the untouched file');
  t.notMatch(body.message, '\n', 'one line');
  t.same(
    body.errors.map((e: { pointer: string; rule: string }) => `${e.pointer} ${e.rule}`).sort(),
    [
      '/bogus unknown-member',
      '/dvr-storage-list/storage/0/max-usage maximum',
      '/stream/0/pause type',
      '/stream/1/stream-name minLength',
    ],
  );
  t.match(
    body.errors.find((e: { rule: string }) => e.rule === 'maximum'),
    {
      line: Number,
      column: Number,
      value: 200,
      message: /at most 100/,
    },
  );
  for (const e of body.errors) t.match(e, { pointer: String, rule: String, message: String });
  t.equal(await readFile(file, 'utf8'), text);
  t.equal(sink.submitted, submitted, 'nothing submitted to the loop');
});

t.test('a fixed field change is refused with the plan error; dry run writes nothing', async (t) => {
  const storage = { id: 1, name: 's', 'dir-path': '/srv/dvr' };
  const { app, file } = await setup(t, { 'dvr-storage-list': { storage: [storage] } });
  const text = await readFile(file, 'utf8');
  const r = await app.inject({
    method: 'PATCH',
    url: '/config/storage/1',
    ...json({ 'dir-path': '/elsewhere' }),
  });
  t.equal(r.statusCode, 400);
  t.match(r.json(), { status: 400, errors: [{ rule: String, message: /dir-path/ }] });
  const dry = await app.inject({
    method: 'PATCH',
    url: '/config/storage/1?dry-run=true',
    ...json({ note: 'x' }),
  });
  t.equal(dry.statusCode, 200);
  t.match(dry.json(), { dryRun: true, plan: { summary: { change: 1 } } });
  t.equal(await readFile(file, 'utf8'), text);
});

t.test('a fixed field changed in the file is refused as a whole, with its line', async (t) => {
  const storage = { id: 1, name: 's', 'dir-path': '/srv/dvr' };
  const { app, file, service, sink } = await setup(t, {
    'dvr-storage-list': { storage: [storage] },
  });
  const good = service.current().etag;
  const submitted = sink.submitted;
  const text = formatConfig({
    'dvr-storage-list': { storage: [{ ...storage, 'dir-path': '/x' }] },
  });
  await writeFile(file, text);
  t.equal(await service.refresh(async () => ({ text, origin: 'file' })), 'invalid');
  t.equal(sink.submitted, submitted, 'nothing submitted to the loop');
  t.equal(service.current().etag, good, 'the last good config stays current');
  const refused = service.invalid();
  t.match(refused, { origin: 'file', message: /dir-path cannot change/ });
  t.match(refused?.issues, [
    { rule: 'fixed', pointer: '/dvr-storage-list/storage/0/dir-path', line: 7, column: 21 },
  ]);
  t.match(service.sourceInfo(), { lastError: { origin: 'file', message: /dir-path/ } });
  // An API edit is not built on the refused text: the source must be fixed first.
  const r = await app.inject({ method: 'PATCH', url: '/config/storage/1', ...json({ note: 'n' }) });
  t.equal(r.statusCode, 409);
  t.match(r.json(), { message: /dir-path cannot change/ });
});

t.test('the 400 of a fixed field change points at its line', async (t) => {
  const storage = { id: 1, name: 's', 'dir-path': '/srv/dvr' };
  const { app } = await setup(t, { 'dvr-storage-list': { storage: [storage] } });
  for (const url of ['/config/storage/1', '/config/storage/1?dry-run=true']) {
    const r = await app.inject({ method: 'PATCH', url, ...json({ 'dir-path': '/elsewhere' }) });
    t.equal(r.statusCode, 400, url);
    t.match(
      r.json().errors,
      [{ rule: 'fixed', pointer: '/dvr-storage-list/storage/0/dir-path', line: 7, column: 21 }],
      url,
    );
  }
});
