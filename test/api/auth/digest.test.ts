// Unit tests of the Digest core: RFC 7616 test vectors, header parsing, nonce expiry,
// nonce-count replay and tampering, driven by a ManualClock.
import t from 'tap';
import {
  DigestAuthenticator,
  digestResponse,
  parseDigestHeader,
} from '../../../src/api/auth/digest.ts';
import { ManualClock } from '../../../src/util/clock.ts';

const LIFETIME_SEC = 60;

function setup() {
  const clock = new ManualClock();
  const auth = new DigestAuthenticator({
    realm: 'sluice',
    clock,
    lifetimeSec: LIFETIME_SEC,
    password: (login) => (login === 'ann' ? 'pw' : undefined),
  });
  return { clock, auth };
}

/** Parameters of the first (or the named algorithm's) challenge. */
function challenge(auth: DigestAuthenticator, algorithm = 'SHA-256', stale = false) {
  const all = auth.challenges(stale).map((c) => parseDigestHeader(c)!);
  return all.find((c) => c['algorithm'] === algorithm)!;
}

function authorization(
  ch: Record<string, string>,
  o: { login?: string; password?: string; nc?: string; uri?: string; method?: string } = {},
) {
  const algorithm = (ch['algorithm'] ?? 'MD5') as 'MD5' | 'SHA-256';
  const login = o.login ?? 'ann';
  const uri = o.uri ?? '/config';
  const nc = o.nc ?? '00000001';
  const cnonce = 'abc123';
  const response = digestResponse({
    algorithm,
    login,
    realm: ch['realm']!,
    password: o.password ?? 'pw',
    method: o.method ?? 'GET',
    uri,
    nonce: ch['nonce']!,
    nc,
    cnonce,
  });
  return (
    `Digest username="${login}", realm="${ch['realm']}", nonce="${ch['nonce']}", uri="${uri}", ` +
    `algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="${cnonce}", response="${response}", ` +
    `opaque="${ch['opaque']}"`
  );
}

t.test('RFC 7616 §3.9.1 example responses', async (t) => {
  const common = {
    login: 'Mufasa',
    realm: 'http-auth@example.org',
    password: 'Circle of Life',
    method: 'GET',
    uri: '/dir/index.html',
    nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
    nc: '00000001',
    cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  };
  t.equal(digestResponse({ ...common, algorithm: 'MD5' }), '8ca523f5e9506fed4657c9700eebdbec');
  t.equal(
    digestResponse({ ...common, algorithm: 'SHA-256' }),
    '753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1',
  );
});

t.test('header parsing', async (t) => {
  t.same(parseDigestHeader('Digest a="x, y", b=2, c="q\\"uote"'), {
    a: 'x, y',
    b: '2',
    c: 'q"uote',
  });
  t.same(parseDigestHeader('digest  Username="u"'), { username: 'u' });
  t.equal(parseDigestHeader('Basic YWxhZGRpbjpvcGVuc2VzYW1l'), undefined);
  t.equal(parseDigestHeader('Digest a="unterminated'), undefined);
  t.equal(parseDigestHeader('Digest a=1, a=2'), undefined, 'repeated parameter');
  t.equal(parseDigestHeader('Digest novalue'), undefined);
});

t.test('challenges: SHA-256 first, then MD5, one nonce, opaque, qop=auth', async (t) => {
  const { auth } = setup();
  const list = auth.challenges().map((c) => parseDigestHeader(c)!);
  t.same(
    list.map((c) => c['algorithm']),
    ['SHA-256', 'MD5'],
  );
  t.equal(list[0]!['nonce'], list[1]!['nonce']);
  t.equal(list[0]!['qop'], 'auth');
  t.ok(list[0]!['opaque']);
  t.notOk(list[0]!['stale']);
  t.equal(parseDigestHeader(auth.challenges(true)[0]!)!['stale'], 'true');
});

t.test('valid responses pass with both algorithms', async (t) => {
  const { auth } = setup();
  for (const alg of ['SHA-256', 'MD5']) {
    const ch = challenge(auth, alg);
    t.same(auth.verify('GET', '/config', authorization(ch)), { ok: true, login: 'ann' }, alg);
  }
});

t.test('wrong password, unknown user, wrong uri, method, realm, opaque', async (t) => {
  const { auth } = setup();
  const ch = challenge(auth);
  const refuse = (h: string, method = 'GET', uri = '/config') => {
    const r = auth.verify(method, uri, h);
    return !r.ok && !r.stale;
  };
  t.ok(refuse(authorization(ch, { password: 'nope' })), 'wrong password');
  t.ok(refuse(authorization(ch, { login: 'bob' })), 'unknown user');
  t.ok(refuse(authorization(ch, { uri: '/other' })), 'uri differs from request');
  t.ok(refuse(authorization(ch), 'PUT'), 'signed for GET, sent as PUT');
  t.ok(refuse(authorization({ ...ch, realm: 'other' })), 'realm');
  t.ok(refuse(authorization({ ...ch, opaque: 'zzz' })), 'opaque');
  t.ok(refuse(authorization(ch).replace('qop=auth', 'qop=auth-int')), 'auth-int');
  t.ok(refuse(authorization(ch, { nc: '1' })), 'malformed nc');
});

t.test('forged or tampered nonce is refused, not stale', async (t) => {
  const { auth } = setup();
  const ch = challenge(auth);
  const nonce = ch['nonce']!;
  const flipped = `${nonce.slice(0, 5)}${nonce[5] === 'A' ? 'B' : 'A'}${nonce.slice(6)}`;
  const r = auth.verify('GET', '/config', authorization({ ...ch, nonce: flipped }));
  t.match(r, { ok: false, stale: false });
  const other = setup().auth; // a nonce from another server instance (another secret)
  const r2 = auth.verify(
    'GET',
    '/config',
    authorization({ ...ch, nonce: challenge(other)['nonce']! }),
  );
  t.match(r2, { ok: false, stale: false });
});

t.test('nonce count must strictly increase', async (t) => {
  const { auth } = setup();
  const ch = challenge(auth);
  t.match(auth.verify('GET', '/config', authorization(ch, { nc: '00000001' })), { ok: true });
  t.match(auth.verify('GET', '/config', authorization(ch, { nc: '00000001' })), {
    ok: false,
    stale: false,
    reason: 'nonce count replayed',
  });
  t.match(auth.verify('GET', '/config', authorization(ch, { nc: '00000003' })), { ok: true });
  t.match(auth.verify('GET', '/config', authorization(ch, { nc: '00000002' })), { ok: false });
  t.match(auth.verify('GET', '/config', authorization(ch, { nc: '0000000a' })), { ok: true });
  t.equal(auth.trackedNonces(), 1);
});

t.test('expired nonce with a valid response is stale; with a wrong one it is not', async (t) => {
  const { auth, clock } = setup();
  const ch = challenge(auth);
  clock.advance(LIFETIME_SEC * 1000 - 1);
  t.match(auth.verify('GET', '/config', authorization(ch)), { ok: true }, 'still fresh');
  clock.advance(2);
  t.match(auth.verify('GET', '/config', authorization(ch, { nc: '00000002' })), {
    ok: false,
    stale: true,
  });
  t.match(auth.verify('GET', '/config', authorization(ch, { password: 'x', nc: '00000003' })), {
    ok: false,
    stale: false,
  });
  // A fresh challenge works again.
  t.match(auth.verify('GET', '/config', authorization(challenge(auth))), { ok: true });
});

t.test('only offered algorithms are accepted', async (t) => {
  const clock = new ManualClock();
  const auth = new DigestAuthenticator({
    realm: 'r',
    clock,
    lifetimeSec: LIFETIME_SEC,
    algorithms: ['SHA-256'],
    password: () => 'pw',
  });
  const ch = challenge(auth);
  t.equal(auth.challenges().length, 1);
  t.match(auth.verify('GET', '/config', authorization({ ...ch, algorithm: 'MD5' })), {
    ok: false,
  });
  t.match(auth.verify('GET', '/config', authorization(ch)), { ok: true });
});

t.test('username* (RFC 5987) names a non-ASCII login', async (t) => {
  const clock = new ManualClock();
  const auth = new DigestAuthenticator({
    realm: 'r',
    clock,
    lifetimeSec: LIFETIME_SEC,
    password: (l) => (l === 'jürgen' ? 'pw' : undefined),
  });
  const ch = challenge(auth);
  const h = authorization(ch, { login: 'jürgen' }).replace(
    'username="jürgen"',
    "username*=UTF-8''j%C3%BCrgen",
  );
  t.same(auth.verify('GET', '/config', h), { ok: true, login: 'jürgen' });
});
