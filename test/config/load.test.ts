// Valid configs: every example loads, the full example round-trips byte for byte, defaults
// are applied to the desired state and elided from the minimal form, warnings are given.
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import {
  applyDefaults,
  elideDefaults,
  fieldRules,
  formatConfig,
  loadConfigText,
} from '../../src/config/store.ts';
import type { ConfigDocument, ConfigError } from '../../src/config/types.ts';

const EXAMPLES = new URL('../../examples/', import.meta.url);
const FULL = readFileSync(new URL('full-config.json', EXAMPLES), 'utf8');
const V = '"x-svc-version": "2.0.2.361"';

t.test('every file in examples/ is valid', async (t) => {
  const files = readdirSync(EXAMPLES).filter((f) => f.endsWith('.json'));
  t.ok(files.includes('full-config.json'));
  for (const f of files) {
    const text = readFileSync(new URL(f, EXAMPLES), 'utf8');
    t.doesNotThrow(() => loadConfigText(text, { source: f }), f);
  }
});

t.test('the full example round-trips byte for byte: load → elide → format', async (t) => {
  const loaded = loadConfigText(FULL);
  t.same(loaded.warnings, [], 'no warnings');
  t.equal(formatConfig(elideDefaults(loaded.doc)), FULL);
  // and through the fully defaulted form as well
  t.equal(formatConfig(elideDefaults(applyDefaults(loaded.doc))), FULL);
});

t.test('the full example uses every record kind', async (t) => {
  const kinds = new Set([...loadConfigText(FULL).desired.resources.values()].map((r) => r.kind));
  for (const k of [
    'user',
    'cs-server',
    'epg-source',
    'epg-channel-set',
    'epg-login',
    'dvb-adapter',
    'storage',
    'stream',
    'stream-adaptive',
  ]) {
    t.ok(kinds.has(k as never), k);
  }
  const doc = JSON.parse(FULL) as ConfigDocument;
  const types = new Set<string>();
  for (const s of doc['stream'] as { input?: { type: string }[] }[]) {
    for (const i of s.input ?? []) types.add(i.type);
  }
  t.equal(types.size, 18, `every input type used: ${[...types].sort().join(' ')}`);
});

t.test('setting a field to its default removes it from the minimal form', async (t) => {
  const doc = JSON.parse(FULL) as ConfigDocument;
  const stream = (doc['stream'] as Record<string, unknown>[])[1]!;
  stream['stream-timeout'] = 30000000; // the default
  stream['pause'] = true; // the default
  const udp = (
    (doc['stream'] as Record<string, unknown>[])[0]!['input'] as Record<string, unknown>[]
  )[0]!;
  udp['socket-buffer-size'] = 0; // default inside an input record, by its type
  (doc['http-server'] as Record<string, unknown>)['realm'] = 'sluice';
  const min = elideDefaults(doc);
  const s = (min['stream'] as Record<string, unknown>[])[1]!;
  t.notOk('stream-timeout' in s);
  t.notOk('pause' in s);
  t.notOk(
    'socket-buffer-size' in
      ((min['stream'] as Record<string, unknown>[])[0]!['input'] as Record<string, unknown>[])[0]!,
  );
  t.notOk('realm' in (min['http-server'] as Record<string, unknown>));
  // whole objects that end up empty go too; required members stay
  const small = elideDefaults({
    'http-server': { port: 43971 },
    user: [{ login: 'a', password: 'p', role: 'viewer' }],
  });
  t.same(small, { user: [{ login: 'a', password: 'p' }] });
  // key order is kept
  t.same(
    Object.keys(
      elideDefaults({ stream: [{ 'stream-name': 'b', id: 2, pause: false, order: 0 }] })[
        'stream'
      ] as object[],
    ).length,
    1,
  );
  t.same(
    Object.keys(
      (
        elideDefaults({ stream: [{ 'stream-name': 'b', id: 2, pause: false, order: 0 }] })[
          'stream'
        ] as object[]
      )[0]!,
    ),
    ['stream-name', 'id', 'pause'],
  );
});

t.test('conditional defaults follow the record', async (t) => {
  const mpts = { 'stream-name': 'm', mpts: true, 'enable-mosaic': false };
  const spts = { 'stream-name': 's', 'enable-mosaic': true };
  t.same(elideDefaults({ stream: [mpts, spts] }), {
    stream: [{ 'stream-name': 'm', mpts: true }, { 'stream-name': 's' }],
  });
  const d = applyDefaults({ stream: [{ 'stream-name': 'm', mpts: true }] });
  const s = (d['stream'] as Record<string, unknown>[])[0]!;
  t.equal(s['enable-mosaic'], false, 'mpts streams default enable-mosaic false');
  t.notOk('ott-hls' in s, 'no OTT members on an mpts stream');
});

t.test('desired state: keys, labels, pointers, defaults, deps', async (t) => {
  const { desired } = loadConfigText(FULL);
  const r = desired.resources;
  t.equal(r.size, 12 + 2 + 1 + 1 + 2 + 2 + 3 + 1 + 5 + 1);
  t.match(desired.hash, /^[0-9a-f]{64}$/);
  const http = r.get('http-server/http-server')!;
  t.equal(http.spec['port'], 8080);
  t.equal(http.pointer, '/http-server');
  const mosaic = r.get('mosaic/mosaic')!;
  t.equal(mosaic.spec['thumbnail-width'], 320, 'singleton defaults');
  t.notOk(
    'storage' in r.get('dvr-storage-list/dvr-storage-list')!.spec,
    'child lists are resources of their own',
  );
  const lab = r.get('stream/name:lab')!;
  t.equal(lab.name, 'lab');
  t.equal(lab.pointer, '/stream/3');
  const input = (lab.spec['input'] as Record<string, unknown>[])[0]!;
  t.equal(input['frame-rate'], 25, 'defaults inside an input by its type');
  t.equal(input['width'], 1280);
  t.equal(lab.spec['ott-window'], 10);
  const news = r.get('stream/11')!;
  t.same(news.deps.map((d) => `${d.kind}/${d.key}`).sort(), [
    'epg-channel-set/1',
    'epg-channel-set/2',
    'epg-source/1',
    'storage/1',
    'stream/10',
  ]);
  t.same(
    r
      .get('stream/12')!
      .deps.map((d) => `${d.kind}/${d.key}`)
      .sort(),
    ['dvb-adapter/1', 'dvb-adapter/2', 'epg-channel-set/2'],
  );
  t.same(
    r.get('stream-adaptive/1')!.deps.map((d) => `${d.kind}/${d.key}`),
    ['stream/11', 'stream/12', 'storage/1'],
  );
  t.same(r.get('epg-login/1')!.deps, [{ kind: 'epg-channel-set', key: '2' }]);
  t.equal(r.get('user/noc')!.spec['role'], 'viewer');
  t.equal(r.get('storage/1')!.name, 'archive-a');
});

t.test('warnings: typo with suggestion, unknown members, lnb-polarization', async (t) => {
  const text = `{${V},
  "server": {"log-levl": "debug"},
  "stream": [{"stream-name": "a", "stream-timout": 5000000,
    "input": [{"type": "udp", "port": 5000, "bind-iff": "eth0"}]}],
  "dvb-adapter": [{"id": 1, "name": "s", "type": 6}]}`;
  const { warnings } = loadConfigText(text);
  const byPointer = Object.fromEntries(warnings.map((w) => [w.pointer, w]));
  t.equal(
    byPointer['/stream/0/stream-timout']?.message,
    'unknown member "stream-timout" is ignored (did you mean stream-timeout?)',
  );
  t.same(
    [byPointer['/stream/0/stream-timout']?.line, byPointer['/stream/0/stream-timout']?.column],
    [3, 35],
  );
  t.match(byPointer['/server/log-levl']?.message, /did you mean log-level\?/);
  t.match(byPointer['/stream/0/input/0/bind-iff']?.message, /did you mean bind-if\?/);
  t.equal(byPointer['/dvb-adapter/0/lnb-polarization']?.rule, 'lnb-polarization');
  t.ok(warnings.every((w) => w.severity === 'warning'));
  t.same(
    loadConfigText(`{"stream": [{"stream-name": "a", "zzzz": 1}]}`).warnings[0]?.message,
    'unknown member "zzzz" is ignored',
  );
});

t.test('a missing x-svc-version is fine', async (t) => {
  t.doesNotThrow(() => loadConfigText('{}'));
  t.equal(loadConfigText('{}').desired.resources.size, 12);
});

t.test('field rules come from the schema annotations', async (t) => {
  const udp = { input: [{ type: 'udp' }], output: [{ type: 'srt' }] };
  t.equal(fieldRules.applyClass('stream', udp, ['input', 0, 'port']), 'restart');
  t.equal(fieldRules.applyClass('stream', udp, ['mpts']), 'replace');
  t.equal(fieldRules.applyClass('stream', udp, ['display-name']), 'hot');
  t.equal(fieldRules.applyClass('stream', udp, ['dvr-hours']), 'hot');
  t.equal(fieldRules.applyClass('stream', udp, ['nonsense']), 'restart');
  t.equal(fieldRules.applyClass('storage', {}, ['dir-path']), 'fixed');
  t.equal(fieldRules.applyClass('storage', {}, ['max-usage']), 'hot');
  t.equal(fieldRules.applyClass('http-server', {}, ['port']), 'restart');
  t.equal(fieldRules.isSecret('stream', udp, ['output', 0, 'passphrase']), true);
  t.equal(fieldRules.isSecret('stream', udp, ['input', 0, 'port']), false);
  t.equal(
    fieldRules.isSecret('stream', { input: [{ type: 'rtsp' }] }, ['input', 0, 'rtsp-password']),
    true,
  );
  t.equal(fieldRules.isSecret('dvb-adapter', { type: 5 }, ['biss-key', 1]), true);
  t.equal(fieldRules.isSecret('user', {}, ['password']), true);
  t.equal(fieldRules.isSecret('epg-login', {}, ['password']), true);
  t.equal(fieldRules.isSecret('cs-server', {}, ['password']), true);
  t.equal(
    fieldRules.isSecret('stream', udp, ['input', 0, 'my-password']),
    true,
    'unknown secret-like names are masked',
  );
});

t.test('warnings: an input without port, a stream-name that is not URL-safe', async (t) => {
  const text = `{"stream": [{"stream-name": "news hd", "input": [{"type": "udp", "address": "239.1.1.1"}, {"type": "tcp", "port": 5}]}]}`;
  const w = loadConfigText(text).warnings.map((i) => `${i.rule} ${i.pointer} ${i.message}`);
  t.same(w, [
    'url-name /stream/0/stream-name stream-name "news hd" has characters other than ASCII letters, digits and . _ ~ - (" "); its OTT URLs need percent-encoding',
    'not-set /stream/0/input/0 port is not set: this udp input cannot receive until it is',
  ]);
});

t.test('warnings: peer-auth without cluster.domain, or on a listening srt input', async (t) => {
  const streams = `"stream": [{"stream-name": "a", "input": [
    {"type": "srt", "address": "origin", "port": 9000, "peer-auth": true},
    {"type": "srt", "listen-mode": true, "port": 9001, "peer-auth": true}],
    "output": [{"type": "srt", "listen-mode": true, "port": 9002, "peer-auth": true}]}]`;
  const w = loadConfigText(`{${streams}}`).warnings.map((i) => `${i.rule} ${i.pointer}`);
  t.same(w, [
    'peer-auth-domain /stream/0/input/0/peer-auth',
    'peer-auth-listener /stream/0/input/1/peer-auth',
    'peer-auth-domain /stream/0/output/0/peer-auth',
  ]);
  const inCluster = loadConfigText(`{"cluster": {"domain": "k7-secret"}, ${streams}}`);
  t.same(
    inCluster.warnings.map((i) => i.rule),
    ['peer-auth-listener'],
    'with a domain only the listener is left',
  );
});

t.test(
  'a non-ASCII stream-name: the warning names the characters, not "outside letters"',
  async (t) => {
    const text = `{"stream": [{"stream-name": "Новости 24"}]}`;
    const [w] = loadConfigText(text).warnings;
    t.equal(
      w?.message,
      'stream-name "Новости 24" has characters other than ASCII letters, digits and . _ ~ - ' +
        '("Н", "о", "в", "с", "т", …); its OTT URLs need percent-encoding',
    );
  },
);

t.test('a misspelt enum word gets the nearest allowed one suggested', async (t) => {
  const text = `{"stream": [{"stream-name": "a", "input": [{"type": "udpp", "port": 5}]}]}`;
  const err = t.throws(() => loadConfigText(text)) as unknown as ConfigError;
  t.match(err.issues, [{ rule: 'enum', message: /got "udpp" \(did you mean "udp"\?\)$/ }]);
  const far = `{"stream": [{"stream-name": "a", "input": [{"type": "carrier-pigeon"}]}]}`;
  const err2 = t.throws(() => loadConfigText(far)) as unknown as ConfigError;
  t.notMatch(err2.issues[0]?.message, /did you mean/, 'no wild guesses');
});

t.test('an input of an unknown type gets one error, not a warning per member', async (t) => {
  const text = `{"stream": [{"stream-name": "a", "input": [{"type": "udpp", "address": "x", "port": 5}]}]}`;
  const err = t.throws(() => loadConfigText(text)) as unknown as ConfigError;
  t.same(
    err.issues.map((i) => i.rule),
    ['enum'],
  );
});
