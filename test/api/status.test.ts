// /data/status of the real server (`sluice serve`): one vocabulary of states (a storage is
// `ready` in /data/dvr-storage-list and in /data/status alike), and `notYetUsed`, the settings
// the config sets that this build accepts but does not act on yet — plus the list's own rules.
import { join } from 'node:path';
import t from 'tap';
import { buildApp } from '../../src/api/app.ts';
import { kindSchema } from '../../src/config/schema.ts';
import { FIELDS_NOT_YET_USED, notYetUsed } from '../../src/drivers/not-yet-used.ts';
import { STREAM_HOT_EFFECTS } from '../../src/drivers/stream/hot.ts';
import { emptyPlan, fakeContext } from '../helpers/api-context.ts';
import { freePort, startServer, tempDir, waitFor } from '../helpers/server.ts';

const READY_TIMEOUT_MS = 20_000;

interface Entry {
  kind: string;
  state?: string;
  status?: Record<string, unknown>;
}

t.test('notYetUsed: the list names only what the config sets', async (t) => {
  const doc = {
    'http-server': { realm: 'r', 'nonce-lifetime-sec': 60 },
    mosaic: { columns: 6 },
    cs: { server: [{ id: 1, name: 'billing' }] },
    'user-default': { role: 'admin', 'max-sessions': 2 },
    stream: [
      {
        id: 1,
        'stream-name': 'a',
        'mpegts-tr101290': true,
        'display-name': 'A',
        input: [
          { type: 'udp', port: 5000 },
          { type: 'dvb', 'adapter-id': 1 },
        ],
        // Every output type of the schema (udp, rtp, srt, rist) is implemented: an implemented
        // one is not listed.
        output: [{ type: 'rist', address: '127.0.0.1', port: 9000 }],
      },
    ],
  };
  t.same(
    notYetUsed(doc).map((e) => [e.pointer, e.setting]),
    [
      ['/user-default/role', 'user-default.role'],
      ['/stream/0/mpegts-tr101290', 'stream.mpegts-tr101290'],
    ],
  );
  t.same(notYetUsed({}), [], 'an empty config sets nothing');
});

t.test(
  'notYetUsed: every pending stream field has a reason; every field is in the schema',
  async (t) => {
    const pending = Object.entries(STREAM_HOT_EFFECTS).filter(([, e]) => e === 'pending');
    t.ok(pending.length > 0);
    for (const [field] of pending) {
      t.ok(FIELDS_NOT_YET_USED['stream']?.[field], `stream.${field} (pending) has its reason`);
    }
    const stream = kindSchema('stream') as { properties: object };
    for (const field of Object.keys(FIELDS_NOT_YET_USED['stream'] ?? {})) {
      t.ok(Object.hasOwn(stream.properties, field), `stream.${field} is a field of the schema`);
    }
  },
);

t.test('the real server', async (t) => {
  const dir = await tempDir(t, 'sluice-status-');
  const srv = await startServer(t, {
    config: {
      'http-server': { realm: 'studio' },
      mosaic: { columns: 6 },
      alerter: { 'repeat-sec': 600 },
      'dvb-adapter': [{ id: 1, name: 'tuner', type: 3 }],
      'dvr-storage-list': {
        storage: [{ id: 1, name: 'disk', 'dir-path': join(dir, 'store') }],
      },
      stream: [
        {
          id: 1,
          'stream-name': 'one',
          'mpegts-tr101290': true,
          'enable-mosaic': false,
          input: [
            { type: 'udp', port: await freePort(), 'bind-if': '127.0.0.1' },
            { type: 'dvb', 'adapter-id': 1 },
          ],
        },
      ],
    },
  });
  const get = async (p: string) => (await fetch(`${srv.url}${p}`)).json();

  const list = await waitFor(
    'the storage to be ready',
    async () => {
      const l = (await get('/data/dvr-storage-list')) as { state: string }[];
      return l[0]?.state === 'ready' ? l : undefined;
    },
    READY_TIMEOUT_MS,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${srv.output()}`);
  });
  t.equal(list[0]!.state, 'ready', '/data/dvr-storage-list says ready');
  const status = (await get('/data/status')) as {
    resources: Entry[];
    notYetUsed: { pointer: string; setting: string; reason: string }[];
  };
  const storage = status.resources.find((r) => r.kind === 'storage');
  t.equal(storage?.state, 'ready', '/data/status says the same word for the storage');
  const holder = status.resources.find((r) => r.kind === 'dvr-storage-list');
  t.same(holder?.status?.['storages'], [{ id: 1, name: 'disk', state: 'ready' }]);
  t.notMatch(JSON.stringify(status), /"(Ready|Error|Not Ready)"/, 'no capitalised state words');

  const named = status.notYetUsed.map((e) => e.setting);
  t.same(
    named,
    ['stream.mpegts-tr101290'],
    'the settings the config sets that do nothing yet, in document order',
  );
  t.notOk(named.includes('http-server.realm'), 'the realm is used now');
  t.notOk(named.includes('mosaic.columns'), 'the mosaic is built (docs/mosaic.md)');
  t.notOk(named.includes('alerter.repeat-sec'), 'the alerter is built (docs/alerting.md)');
  t.equal(
    status.resources.find((r) => r.kind === 'alerter')?.state,
    'running',
    'the alerter has a driver',
  );
  for (const e of status.notYetUsed) t.ok(e.reason.length > 0, `${e.setting}: ${e.reason}`);
});

t.test('/data/ready: 503 until a config is applied, then 200; no sign-in needed', async (t) => {
  let revision = '';
  const ctx = fakeContext({
    loop: {
      plan: () => emptyPlan(),
      status: () => ({ revision, resources: [] }),
      instances: () => [],
    },
  });
  const app = await buildApp(ctx);
  t.teardown(() => app.close());
  // From an address that is not anonymous: a probe cannot do Digest.
  const probe = () => app.inject({ url: '/data/ready', remoteAddress: '10.1.2.3' });
  const before = await probe();
  t.equal(before.statusCode, 503);
  t.same(before.json(), { ready: false, revision: '' });
  revision = 'abc';
  const after = await probe();
  t.equal(after.statusCode, 200);
  t.same(after.json(), { ready: true, revision: 'abc' });
  t.equal(
    (await app.inject({ url: '/data/status', remoteAddress: '10.1.2.3' })).statusCode,
    401,
    'the rest of /data still asks',
  );
});
