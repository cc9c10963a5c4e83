// Edges of the admin API found by an outside look, each against the real server (`sluice
// serve`): member names Object.prototype also has, bodies nested too deep or too wide or too
// large, If-Match with a dry run and with a weak tag, a URL that cannot be decoded, and an
// SQL answer too large to send.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { mergePatch } from '../../../src/api/config/edits.ts';
import { checkBodyShape, MAX_BODY_DEPTH, MAX_OBJECT_MEMBERS } from '../../../src/api/json-body.ts';
import { RawClient } from '../../helpers/raw-http.ts';
import { freePort, startServer, tempDir, waitFor } from '../../helpers/server.ts';

const MERGE = 'application/merge-patch+json';
const IMPORT_TIMEOUT_MS = 20_000;
/** A refusal of a huge body must come at once, not after the server has chewed on it. */
const FAST_REFUSAL_MS = 5_000;
const MIB = 1024 * 1024;

t.test('mergePatch: every name is an ordinary member; null removes', async (t) => {
  const out = mergePatch(
    { a: 1, keep: true },
    { constructor: 1, prototype: { x: 1 }, b: 2, a: null, toString: 'x' },
  ) as Record<string, unknown>;
  t.same(
    Object.entries(out),
    [
      ['keep', true],
      ['constructor', 1],
      ['prototype', { x: 1 }],
      ['b', 2],
      ['toString', 'x'],
    ],
    'members after constructor and prototype are applied, in order',
  );
  t.equal(Object.getPrototypeOf(out), Object.prototype, 'no prototype was changed');
  const proto = JSON.parse('{"__proto__": {"polluted": true}, "after": 1}');
  const safe = mergePatch({}, proto) as Record<string, unknown>;
  t.equal(({} as Record<string, unknown>)['polluted'], undefined, 'Object.prototype untouched');
  t.equal(safe['after'], 1);
});

t.test('checkBodyShape: depth and width limits, strings ignored', async (t) => {
  const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  t.equal(checkBodyShape(nest(MAX_BODY_DEPTH)), undefined, `${MAX_BODY_DEPTH} deep is fine`);
  t.match(
    checkBodyShape(nest(MAX_BODY_DEPTH + 1))?.message,
    /more than 64 deep \(line 1, column 65\)/,
  );
  t.equal(checkBodyShape(`{"s": "${'{'.repeat(100)}:\\"{"}`), undefined, 'brackets in strings');
  const wide = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;
  t.equal(checkBodyShape(wide(MAX_OBJECT_MEMBERS)), undefined);
  t.match(
    checkBodyShape(`\n ${wide(MAX_OBJECT_MEMBERS + 1)}`)?.message,
    /more than 1000 members \(line 2/,
  );
  t.equal(checkBodyShape(`[${'0,'.repeat(5000)}0]`), undefined, 'arrays have no member limit');
});

t.test('the real API', async (t) => {
  const dir = await tempDir(t, 'sluice-api-edges-');
  const guide = join(dir, 'guide.xml');
  await writeFile(
    guide,
    '<?xml version="1.0" encoding="UTF-8"?>\n<tv><channel id="a.example"><display-name>A</display-name></channel></tv>\n',
  );
  const srv = await startServer(t, {
    config: {
      epg: { source: [{ id: 1, name: 'guide', source: guide, enable: true }] },
      stream: [
        {
          id: 1,
          'stream-name': 'one',
          'display-name': 'Before',
          input: [{ type: 'udp', port: await freePort(), 'bind-if': '127.0.0.1' }],
        },
      ],
    },
  });
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${srv.url}${path}`, { signal: AbortSignal.timeout(30_000), ...init });
  const send = async (method: string, path: string, body: string, headers = {}) => {
    const r = await call(path, {
      method,
      headers: { 'content-type': MERGE, ...headers },
      body,
    });
    return {
      status: r.status,
      headers: r.headers,
      body: (await r.json()) as Record<string, unknown>,
    };
  };
  const record = async () =>
    (await (await call('/config/stream/1')).json()) as Record<string, unknown>;

  t.test('constructor and prototype members are applied, not a silent stop', async (t) => {
    const r = await send(
      'PATCH',
      '/config/stream/1',
      '{"constructor": 1, "prototype": 2, "display-name": "After"}',
    );
    t.equal(r.status, 200, JSON.stringify(r.body));
    const rec = await record();
    t.equal(rec['display-name'], 'After', 'the member after them is applied');
    t.equal(rec['constructor'], 1, 'the record keeps them like any unknown member');
    // At the top level an unknown member is an error: named, 400.
    const top = await send('PATCH', '/config', '{"constructor": {"a": 1}}');
    t.equal(top.status, 400);
    t.match(top.body['message'], /"constructor"/);
    const proto = await send('PATCH', '/config/stream/1', '{"__proto__": {"x": 1}, "id": 1}');
    t.equal(proto.status, 400);
    t.match(proto.body['message'], /"__proto__"/, 'the refused member is named');
  });

  t.test('nesting past 64 is 400 before anything recurses', async (t) => {
    const deep = 100_000;
    const body = `{"display-name": ${'['.repeat(deep)}${']'.repeat(deep)}}`;
    const r = await send('PATCH', '/config/stream/1', body);
    t.equal(r.status, 400);
    t.match(r.body['message'], /nests objects and arrays more than 64 deep/);
  });

  t.test('a million members: 400 at once; over 64 MB: 413', async (t) => {
    const keys = Array.from({ length: 1_000_000 }, (_, i) => `"unknown-${i}":0`).join(',');
    const started = performance.now();
    const r = await send('PUT', '/config/stream/1', `{"id":1,${keys}}`);
    const took = performance.now() - started;
    t.equal(r.status, 400);
    t.match(r.body['message'], /more than 1000 members/);
    t.ok(took < FAST_REFUSAL_MS, `answered in ${took.toFixed(0)} ms`);
    // Spread over many records (each under the member limit) they are kept with a warning, as
    // the schema says, but only the first few are listed (each costs a "did you mean").
    const spread = Array.from({ length: 500 }, (_, i) => {
      const rec: Record<string, unknown> = { id: i + 10, 'stream-name': `s${i}`, input: [] };
      for (let k = 0; k < 200; k++) rec[`unknown-${k}`] = 0;
      return rec;
    });
    const before = performance.now();
    const plan = await call('/config/plan', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ stream: spread }),
    });
    const planned = (await plan.json()) as { plan: { warnings: { message: string }[] } };
    const spent = performance.now() - before;
    t.equal(plan.status, 200);
    t.ok(spent < FAST_REFUSAL_MS, `100,000 unknown members planned in ${spent.toFixed(0)} ms`);
    const messages = planned.plan.warnings.map((w) => w.message);
    t.equal(
      messages.filter((m) => m.startsWith('unknown member "')).length,
      200,
      'the first 200 listed',
    );
    t.ok(
      messages.includes('99800 more unknown members are ignored (only the first 200 are listed)'),
      'the rest counted',
    );
    // A body past the limit is refused on its Content-Length, before it is read (over a raw
    // socket: a client still sending when the answer comes may see the connection reset).
    const raw = await RawClient.open(srv.port);
    t.teardown(() => raw.close());
    raw.send(
      `PUT /config HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${65 * MIB}\r\n\r\n{"x": "`,
    );
    const huge = await raw.next();
    t.equal(huge.status, 413);
    t.same(JSON.parse(huge.body.toString()), {
      status: 413,
      message: 'the request body is larger than the 64 MB limit',
    });
  });

  t.test('If-Match: stale with a dry run, and weak, are 412', async (t) => {
    const cur = await call('/config');
    const etag = cur.headers.get('etag')!;
    await cur.arrayBuffer();
    const patch = '{"display-name": "Dry"}';
    const stale = await send('PATCH', '/config/stream/1?dry-run=true', patch, {
      'if-match': '"0000"',
    });
    t.equal(stale.status, 412, 'a stale tag fails the dry run as it would the write');
    const fresh = await send('PATCH', '/config/stream/1?dry-run=true', patch, { 'if-match': etag });
    t.equal(fresh.status, 200, 'the current tag passes');
    t.equal(fresh.body['dryRun'], true);
    const weak = await send('PATCH', '/config/stream/1', patch, { 'if-match': `W/${etag}` });
    t.equal(weak.status, 412, 'a weak tag never matches a write');
    t.match(weak.body['message'], /weak W\/ tag never matches/);
    const weakDry = await send('PATCH', '/config/stream/1?dry-run=true', patch, {
      'if-match': `W/${etag}`,
    });
    t.equal(weakDry.status, 412);
    t.not((await record())['display-name'], 'Dry', 'nothing was written');
  });

  t.test('a URL that cannot be decoded gets the house error body', async (t) => {
    const r = await call('/x/%ff%fe');
    t.equal(r.status, 400);
    t.match(r.headers.get('content-type'), /^application\/json/);
    t.same(await r.json(), {
      status: 400,
      message: 'the URL path /x/%ff%fe cannot be decoded: a %-escape in it is not UTF-8',
    });
  });

  t.test('an SQL answer of 60 MB is refused as too large, not as a time-out', async (t) => {
    const sql = (q: string) =>
      call('/data/epg/sql?s=1', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sql: q }),
      });
    await waitFor(
      'the EPG source database',
      async () => ((await sql('SELECT count(*) FROM channel')).ok ? true : undefined),
      IMPORT_TIMEOUT_MS,
    );
    // 1,000 rows of 60,000 characters.
    const r = await sql(
      'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000) ' +
        'SELECT x, hex(zeroblob(30000)) FROM c',
    );
    const body = (await r.json()) as Record<string, unknown>;
    t.equal(r.status, 400);
    t.match(
      body['message'],
      /^SQL answer too large: more than the 16 MB limit \(reached after \d+ rows\)/,
    );
    t.notMatch(body['message'], /time limit/);
  });
});
