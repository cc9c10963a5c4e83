// /config routes through inject() against an in-memory ConfigService: where each kind lives
// in the document, ETags and If-Match, merge patches, errors and their shapes, dry runs.
import t, { type Test } from 'tap';
import { buildApp } from '../../../src/api/app.ts';
import type { AppContext } from '../../../src/api/context.ts';
import type { ConfigDocument, ConfigIssue } from '../../../src/config/types.ts';
import { FakeConfigService, fakeContext } from '../../helpers/api-context.ts';

async function app(t: Test, doc: ConfigDocument = {}, over: Partial<AppContext> = {}) {
  const config = over.config ?? new FakeConfigService(doc);
  const a = await buildApp(fakeContext({ config, ...over }));
  t.teardown(() => a.close());
  return { a, config: config as FakeConfigService };
}

const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

t.test('every collection kind lives where DESIGN.md says', async (t) => {
  const cases: Array<[string, string[], Record<string, unknown>, string]> = [
    ['stream', ['stream'], { id: 3, 'stream-name': 'news' }, '3'],
    ['stream-adaptive', ['stream-adaptive'], { id: 4, 'stream-name': 'multi', streams: [3] }, '4'],
    ['user', ['user'], { login: 'ann', password: 'x', role: 'viewer' }, 'ann'],
    ['dvb-adapter', ['dvb-adapter'], { id: 1, name: 'a1' }, '1'],
    ['storage', ['dvr-storage-list', 'storage'], { id: 2, name: 's', 'dir-path': '/d' }, '2'],
    ['epg-source', ['epg', 'source'], { id: 5, name: 'x', source: '/x.xml' }, '5'],
    ['epg-channel-set', ['epg-server', 'channel-set'], { id: 6, name: 'cs' }, '6'],
    ['epg-login', ['epg-server', 'login'], { id: 7, login: 'l', password: 'p' }, '7'],
    ['cs-server', ['cs', 'server'], { id: 8, name: 'b', password: 'p', url: 'http://x' }, '8'],
  ];
  for (const [kind, path, rec, id] of cases) {
    const { a, config } = await app(t);
    const created = await a.inject({ method: 'POST', url: `/config/${kind}`, ...json(rec) });
    t.equal(created.statusCode, 201, `${kind} created`);
    t.equal(created.headers.location, `/config/${kind}/${id}`);
    let node: unknown = config.doc;
    for (const k of path) node = (node as Record<string, unknown>)[k];
    t.same(node, [rec], `${kind} stored at /${path.join('/')}`);

    const got = await a.inject({ url: `/config/${kind}/${id}` });
    t.same(got.json(), rec);
    t.same((await a.inject({ url: `/config/${kind}` })).json(), [rec]);

    const patched = await a.inject({
      method: 'PATCH',
      url: `/config/${kind}/${id}`,
      ...json({ note: 'n' }),
    });
    t.equal(patched.statusCode, 200, `${kind} patched`);
    t.same((await a.inject({ url: `/config/${kind}/${id}` })).json(), { ...rec, note: 'n' });

    const deleted = await a.inject({ method: 'DELETE', url: `/config/${kind}/${id}` });
    t.equal(deleted.statusCode, 200, `${kind} deleted`);
    t.same(config.doc, {}, 'empty list and container removed');
    t.equal((await a.inject({ url: `/config/${kind}/${id}` })).statusCode, 404);
  }
});

t.test('streams with id 0 are named by stream-name; numbers name ids first', async (t) => {
  const { a } = await app(t, {
    stream: [{ 'stream-name': 'news' }, { id: 12, 'stream-name': 'sport' }],
  });
  t.same((await a.inject({ url: '/config/stream/news' })).json(), { 'stream-name': 'news' });
  t.same((await a.inject({ url: '/config/stream/12' })).json(), { id: 12, 'stream-name': 'sport' });
  t.same((await a.inject({ url: '/config/stream/sport' })).json(), {
    id: 12,
    'stream-name': 'sport',
  });
  const r = await a.inject({ url: '/config/stream/13' });
  t.equal(r.statusCode, 404);
  t.same(r.json(), { status: 404, message: 'No stream 13' });
  const posted = await a.inject({
    method: 'POST',
    url: '/config/stream',
    ...json({ 'stream-name': 'a b' }),
  });
  t.equal(posted.headers.location, '/config/stream/a%20b');
  t.equal((await a.inject({ url: '/config/stream/a%20b' })).statusCode, 200);
});

t.test('POST: duplicate identity 409, missing identity 400, not an object 400', async (t) => {
  const { a } = await app(t, { stream: [{ id: 1, 'stream-name': 'a' }] });
  const dup = await a.inject({
    method: 'POST',
    url: '/config/stream',
    ...json({ id: 1, 'stream-name': 'b' }),
  });
  t.equal(dup.statusCode, 409);
  t.same(dup.json(), { status: 409, message: 'stream 1 already exists' });
  const none = await a.inject({ method: 'POST', url: '/config/stream', ...json({ pause: false }) });
  t.equal(none.statusCode, 400);
  t.match(none.json().message, /needs id or stream-name/);
  const arr = await a.inject({ method: 'POST', url: '/config/user', ...json([1]) });
  t.equal(arr.statusCode, 400);
});

t.test('PUT a record keeps its identity first; PATCH null removes a member', async (t) => {
  const { a, config } = await app(t, { stream: [{ id: 1, 'stream-name': 'a', pause: false }] });
  const put = await a.inject({
    method: 'PUT',
    url: '/config/stream/1',
    ...json({ 'stream-name': 'b' }),
  });
  t.equal(put.statusCode, 200);
  t.same(Object.keys((config.doc['stream'] as object[])[0]!), ['id', 'stream-name']);
  t.same(config.doc['stream'], [{ id: 1, 'stream-name': 'b' }]);
  await a.inject({
    method: 'PATCH',
    url: '/config/stream/1',
    payload: '{"display-name":"B","trace":true}',
    headers: { 'content-type': 'application/merge-patch+json' },
  });
  const r = await a.inject({
    method: 'PATCH',
    url: '/config/stream/1',
    payload: '{"trace":null}',
    headers: { 'content-type': 'application/merge-patch+json' },
  });
  t.equal(r.statusCode, 200);
  t.same(config.doc['stream'], [{ id: 1, 'stream-name': 'b', 'display-name': 'B' }]);
});

t.test('whole document and singletons', async (t) => {
  const { a, config } = await app(t, { server: { name: 'a' } });
  t.same((await a.inject({ url: '/config/server' })).json(), { name: 'a' });
  t.same((await a.inject({ url: '/config/http-server' })).json(), {}, 'absent singleton is {}');
  await a.inject({ method: 'PATCH', url: '/config/http-server', ...json({ port: 8080 }) });
  await a.inject({ method: 'PUT', url: '/config/server', ...json({}) });
  t.same(config.doc, { 'http-server': { port: 8080 } }, 'PUT {} resets a singleton to defaults');
  const patch = await a.inject({
    method: 'PATCH',
    url: '/config',
    ...json({ 'http-server': null, x: 1 }),
  });
  t.equal(patch.statusCode, 200);
  t.same(config.doc, { x: 1 });
  await a.inject({ method: 'PUT', url: '/config', ...json({ stream: [] }) });
  t.same(config.doc, { stream: [] });
  t.same(config.edits, [
    'api: patch http-server',
    'api: replace server',
    'api: patch config',
    'api: replace config',
  ]);
});

t.test('ETag on reads, If-None-Match 304, If-Match 412 when stale', async (t) => {
  const { a, config } = await app(t, { stream: [{ id: 1, 'stream-name': 'a' }] });
  const r = await a.inject({ url: '/config/stream/1' });
  const etag = r.headers.etag as string;
  t.equal(etag, config.etag());
  t.equal((await a.inject({ url: '/config' })).headers.etag, etag, 'same ETag: the file version');
  t.equal((await a.inject({ url: '/config', headers: { 'if-none-match': etag } })).statusCode, 304);

  const ok = await a.inject({
    method: 'PATCH',
    url: '/config/stream/1',
    ...json({ pause: false }),
    headers: { 'content-type': 'application/json', 'if-match': etag },
  });
  t.equal(ok.statusCode, 200);
  t.equal(ok.headers.etag, ok.json().etag);
  t.not(ok.json().etag, etag);
  const stale = await a.inject({
    method: 'PATCH',
    url: '/config/stream/1',
    ...json({ pause: true }),
    headers: { 'content-type': 'application/json', 'if-match': etag },
  });
  t.equal(stale.statusCode, 412);
  t.same(stale.json(), { status: 412, message: 'Precondition Failed' });
  t.same(config.doc['stream'], [{ id: 1, 'stream-name': 'a', pause: false }]);
});

t.test('an invalid config is 400 listing every error', async (t) => {
  const validate = (doc: ConfigDocument): ConfigIssue[] =>
    ((doc['stream'] as Record<string, unknown>[]) ?? []).flatMap((s, i) =>
      typeof s['port'] === 'number' && s['port'] > 65534
        ? [
            {
              severity: 'error' as const,
              pointer: `/stream/${i}/port`,
              line: 3 + i,
              column: 5,
              rule: 'maximum',
              message: 'port must be at most 65534',
              value: s['port'],
            },
          ]
        : [],
    );
  const config = new FakeConfigService({ stream: [{ id: 1 }, { id: 2 }] }, validate);
  const { a } = await app(t, {}, { config });
  const r = await a.inject({
    method: 'PATCH',
    url: '/config',
    ...json({
      stream: [
        { id: 1, port: 70000 },
        { id: 2, port: 70001 },
      ],
    }),
  });
  t.equal(r.statusCode, 400);
  t.same(r.json(), {
    status: 400,
    message: '2 error(s) in the config',
    errors: [
      {
        pointer: '/stream/0/port',
        line: 3,
        column: 5,
        rule: 'maximum',
        message: 'port must be at most 65534',
        value: 70000,
      },
      {
        pointer: '/stream/1/port',
        line: 4,
        column: 5,
        rule: 'maximum',
        message: 'port must be at most 65534',
        value: 70001,
      },
    ],
  });
  t.same(config.doc, { stream: [{ id: 1 }, { id: 2 }] }, 'nothing changed');
});

t.test('404, 405 with Allow, bad bodies, request validation in the same shape', async (t) => {
  const { a } = await app(t, { stream: [{ id: 1, 'stream-name': 'a' }] });
  const cases: Array<[string, string, number, string?]> = [
    ['GET', '/config/nope', 404],
    ['GET', '/config/nope/1', 404],
    ['GET', '/config/server/1', 404],
    ['POST', '/config', 405, 'GET, HEAD, PUT, PATCH'],
    ['DELETE', '/config', 405, 'GET, HEAD, PUT, PATCH'],
    ['DELETE', '/config/stream', 405, 'GET, HEAD, POST'],
    ['DELETE', '/config/server', 405, 'GET, HEAD, PUT, PATCH'],
    ['PUT', '/config/stream', 405, 'GET, HEAD, POST'],
    ['POST', '/config/server', 405, 'GET, HEAD, PUT, PATCH'],
    ['POST', '/config/stream/1', 405, 'GET, HEAD, PUT, PATCH, DELETE'],
  ];
  for (const [method, url, status, allow] of cases) {
    const r = await a.inject({ method: method as 'GET', url, ...json({}) });
    t.equal(r.statusCode, status, `${method} ${url}`);
    t.equal(r.json().status, status);
    if (allow) {
      t.equal(r.headers.allow, allow, `Allow on ${method} ${url}`);
      t.equal(r.json().message, `${method} is not allowed on ${url}; it takes ${allow}`);
    }
  }
  const broken = await a.inject({
    method: 'PATCH',
    url: '/config',
    payload: '{"stream": [',
    headers: { 'content-type': 'application/json' },
  });
  t.equal(broken.statusCode, 400);
  t.same(broken.json(), {
    status: 400,
    message:
      'the request body is not valid JSON: unexpected end of file, expected a value (line 1, column 13)',
    errors: [
      {
        pointer: '',
        rule: 'syntax',
        message: 'unexpected end of file, expected a value',
        line: 1,
        column: 13,
      },
    ],
  });
  for (const type of ['application/json', 'application/merge-patch+json']) {
    const comma = await a.inject({
      method: 'PATCH',
      url: '/config/stream/1',
      payload: '{\n  "note": "x",\n}',
      headers: { 'content-type': type },
    });
    t.equal(comma.statusCode, 400, type);
    t.match(comma.json(), { errors: [{ line: 2, column: 14, message: /trailing comma/ }] }, type);
  }
  // Members that could reach Object.prototype are still refused, and say so.
  for (const [payload, named] of [
    ['{"__proto__": {"x": 1}}', /"__proto__" member/],
    ['{"constructor": {"prototype": {"x": 1}}}', /"constructor" with a "prototype" member/],
  ] as const) {
    const poison = await a.inject({
      method: 'PATCH',
      url: '/config',
      payload,
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    t.equal(poison.statusCode, 400, payload);
    t.match(poison.json().message, named, payload);
    t.equal(({} as Record<string, unknown>)['x'], undefined, 'Object.prototype untouched');
  }
  const text = await a.inject({
    method: 'PATCH',
    url: '/config',
    payload: 'x',
    headers: { 'content-type': 'application/xml' },
  });
  t.equal(text.statusCode, 415);
  // text/plain is parsed by the app (for /data/epg/sql), but a config body of it is still 415.
  for (const [method, url] of [
    ['PATCH', '/config'],
    ['POST', '/config/stream'],
    ['PUT', '/config/stream/1'],
  ]) {
    const plain = await a.inject({
      method: method as 'PATCH',
      url: url!,
      payload: '{"pause": true}',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    });
    t.equal(plain.statusCode, 415, `text/plain ${method} ${url}`);
    t.match(plain.json().message, /Content-Type text\/plain is not accepted/);
  }
  // A fixed path of another part asked with a method it does not take: 405 with Allow too.
  const epg = await a.inject({ method: 'POST', url: '/data/epg/channel?name=x', ...json({}) });
  t.equal(epg.statusCode, 405);
  t.equal(epg.headers.allow, 'GET, HEAD');
  t.equal(epg.json().message, 'POST is not allowed on /data/epg/channel; it takes GET, HEAD');
  t.equal((await a.inject({ method: 'POST', url: '/no/such/path' })).statusCode, 404);
  const badQuery = await a.inject({ method: 'PATCH', url: '/config?dry-run=perhaps', ...json({}) });
  t.equal(badQuery.statusCode, 400);
  t.match(badQuery.json(), {
    status: 400,
    errors: [{ pointer: '/querystring/dry-run', rule: 'type' }],
  });
  const notObject = await a.inject({ method: 'PUT', url: '/config', ...json([1, 2]) });
  t.equal(notObject.statusCode, 400);
  t.match(notObject.json(), { status: 400, errors: [{ rule: 'type' }] });
});

t.test('dry run plans without writing; POST /config/plan plans a whole document', async (t) => {
  const { a, config } = await app(t, { stream: [{ id: 1, 'stream-name': 'a' }] });
  const before = config.etag();
  const r = await a.inject({
    method: 'PATCH',
    url: '/config/stream/1?dry-run=true',
    ...json({ pause: false }),
  });
  t.equal(r.statusCode, 200);
  t.match(r.json(), { etag: before, dryRun: true, plan: { changed: true } });
  t.equal(config.etag(), before, 'nothing written');
  const p = await a.inject({
    method: 'POST',
    url: '/config/plan',
    ...json({ server: { name: 'x' } }),
  });
  t.equal(p.statusCode, 200);
  t.match(p.json(), { dryRun: true, plan: { format: 'sluice-plan/1', summary: { change: 2 } } });
  t.equal(config.edits.length, 0);

  // Without an injected planner the document is loaded for real and planned by the loop.
  const { a: without } = await app(t, {}, { planFor: undefined });
  const u = await without.inject({ method: 'POST', url: '/config/plan', ...json({}) });
  t.equal(u.statusCode, 200);
  t.match(u.json(), { dryRun: true, plan: { format: 'sluice-plan/1' } });
  const bad = await without.inject({ method: 'POST', url: '/config/plan', ...json({ bogus: 1 }) });
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { status: 400, errors: [{ pointer: '/bogus', rule: 'unknown-member' }] });
});

t.test('100 concurrent PATCHes of different streams all persist', async (t) => {
  const N = 100;
  const streams = Array.from({ length: N }, (_, i) => ({ id: i + 1, 'stream-name': `s${i + 1}` }));
  const { a, config } = await app(t, { stream: streams });
  const answers = await Promise.all(
    streams.map((s) =>
      a.inject({
        method: 'PATCH',
        url: `/config/stream/${s.id}`,
        ...json({ 'display-name': `D${s.id}` }),
      }),
    ),
  );
  t.same(
    answers.map((r) => r.statusCode),
    answers.map(() => 200),
  );
  t.same(
    config.doc['stream'],
    streams.map((s) => ({ ...s, 'display-name': `D${s.id}` })),
  );
});
