// The spec interfaces generated from schemas/: the file is current, and a sample record typed
// by them (checked by tsc with the rest of test/) is also a valid config.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { formattedSpecTypes, SPEC_TYPES } from '../../scripts/gen-spec-types.ts';
import { loadConfigText } from '../../src/config/parse.ts';
import { schemasHash } from '../../src/config/schema.ts';
import type {
  DvrStorageListSpec,
  HttpServerSpec,
  StreamAdaptiveSpec,
  StreamInputSpec,
  StreamSpec,
  UserSpec,
} from '../../src/config/spec-types.generated.ts';
import { SPEC_TYPES_SCHEMA_HASH } from '../../src/config/spec-types.generated.ts';

const RUN = 'run: npx tsx scripts/gen-spec-types.ts';

t.test('the generated spec types match schemas/ and the generator', async (t) => {
  t.equal(SPEC_TYPES_SCHEMA_HASH, schemasHash(), RUN);
  t.equal(readFileSync(SPEC_TYPES, 'utf8'), formattedSpecTypes(), RUN);
});

const input: StreamInputSpec = { type: 'udp', address: '239.0.0.1', port: 1234 };
const news: StreamSpec = {
  id: 1,
  'stream-name': 'news',
  pause: false,
  'ott-hls': 1,
  'dvr-storage': 1,
  input: [input, { type: 'file', 'file-path': '/srv/loop.ts' }],
};
const group: StreamAdaptiveSpec = { id: 2, 'stream-name': 'news-abr', streams: [1] };
const admin: UserSpec = { login: 'admin', password: 'secret', role: 'admin' };
const http: HttpServerSpec = { port: 8080 };
const storage: DvrStorageListSpec = {
  storage: [{ id: 1, name: 'archive', 'dir-path': '/srv/archive' }],
};

// Each of these must fail to type-check (tsc reports an unused @ts-expect-error otherwise).
// @ts-expect-error stream-name is required
const nameless: StreamSpec = { id: 3 };
// @ts-expect-error role is an enum
const superuser: UserSpec = { login: 'x', password: 'y', role: 'root' };
// @ts-expect-error port is a number
const textPort: HttpServerSpec = { port: '8080' };

t.test('a sample typed by the spec interfaces is a valid config', async (t) => {
  const doc = {
    'http-server': http,
    user: [admin],
    'dvr-storage-list': storage,
    stream: [news],
    'stream-adaptive': [group],
  };
  const loaded = loadConfigText(JSON.stringify(doc));
  t.equal(loaded.desired.resources.get('stream/1')?.name, 'news');
  t.ok([nameless, superuser, textPort].every((x) => typeof x === 'object'));
});
