// The viewer gate against real billing servers (node:http on loopback): servers in order and
// by login prefix/suffix, templates, the verdict cache, the when-unavailable policy, sessions
// with their accounting, kicks and the per-viewer session limit. Time is a ManualClock.
import pino from 'pino';
import t from 'tap';
import { type GateSettings, ViewerGate } from '../../src/billing/gate.ts';
import type { BillingServer } from '../../src/billing/server.ts';
import type { TrackedResponse } from '../../src/billing/sessions.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { billingServer, startBilling, type TestBilling } from '../helpers/billing.ts';

const log = pino({ level: 'silent' });

const SETTINGS: GateSettings = {
  verdictCacheMs: 60_000,
  denialCacheMs: 10_000,
  whenUnavailable: 'keep',
  idleMs: 60_000,
  interimMs: 300_000,
  kickMs: 300_000,
  loopbackAnonymous: true,
};

const server = (b: TestBilling, more: Partial<BillingServer> = {}) => billingServer(b.url, more);

function gateWith(settings: Partial<GateSettings> = {}) {
  const clock = new ManualClock();
  const gate = new ViewerGate(clock, log);
  gate.configure({ ...SETTINGS, ...settings });
  return { clock, gate };
}

const req = (token: string, more: Record<string, unknown> = {}) => ({
  stream: 'news',
  ip: '10.1.1.1',
  userAgent: 'player/1',
  query: { token, ...more },
});

/** A response whose socket has written `bytes` by the time it closes. */
function fakeResponse() {
  const socket = { bytesWritten: 1000 };
  let onClose: (() => void) | undefined;
  const res: TrackedResponse & { finish(bytes: number): void; destroyed: boolean } = {
    socket,
    destroyed: false,
    once(_e, fn) {
      onClose = fn;
      return res;
    },
    destroy() {
      res.destroyed = true;
      onClose?.();
    },
    finish(bytes: number) {
      socket.bytesWritten += bytes;
      onClose?.();
    },
  };
  return res;
}

t.test(
  'inactive without servers; 401 without credentials; loopback plays anonymously',
  async (t) => {
    const b = await startBilling();
    t.teardown(b.close);
    const { gate } = gateWith();
    t.notOk(gate.active);
    t.same(await gate.admit(req('')), { ok: true, query: '' });
    gate.setServer(server(b));
    t.ok(gate.active);
    t.match(await gate.admit({ ...req(''), query: {} }), {
      ok: false,
      status: 401,
      message: /token/,
    });
    t.same(await gate.admit({ ...req(''), ip: '127.0.0.1', query: {} }), { ok: true, query: '' });
    gate.configure({ ...SETTINGS, loopbackAnonymous: false });
    t.match(await gate.admit({ ...req(''), ip: '127.0.0.1', query: {} }), {
      ok: false,
      status: 401,
    });
    t.equal(b.requests.length, 0, 'nothing asked of billing');
    gate.deleteServer(1);
    t.notOk(gate.active);
  },
);

t.test('the built-in query, the verdict and its cache', async (t) => {
  const b = await startBilling((r) =>
    r.query.get('token') === 'good' ? { status: 200 } : { status: 403, body: 'unpaid' },
  );
  t.teardown(b.close);
  const { gate, clock } = gateWith();
  gate.setServer(server(b));
  const a = await gate.admit(req('good'));
  t.match(a, { ok: true, query: 'token=good' });
  const auth = b.events('auth')[0]!;
  t.equal(auth.method, 'GET');
  t.equal(auth.path, '/auth');
  t.equal(auth.query.get('token'), 'good');
  t.equal(auth.query.get('login'), 'good', 'a token alone is the login');
  t.equal(auth.query.get('ip'), '10.1.1.1');
  t.equal(auth.query.get('stream'), 'news');
  t.equal(auth.query.get('user_agent'), 'player/1');
  t.equal(auth.query.get('secret'), 's3cret');
  await b.waitFor((r) => r.query.get('event') === 'start');

  for (let i = 0; i < 5; i++) t.match(await gate.admit(req('good')), { ok: true });
  t.equal(b.events('auth').length, 1, 'cached: billing asked once');
  t.match(await gate.admit(req('bad')), {
    ok: false,
    status: 403,
    message: 'Refused by billing: unpaid',
  });
  t.match(await gate.admit(req('bad')), { ok: false, status: 403 });
  t.equal(b.events('auth').length, 2, 'a refusal is cached too');
  clock.advance(10_001);
  await gate.admit(req('bad'));
  t.equal(b.events('auth').length, 3, 'denial-cache-sec passed: asked again');
  clock.advance(50_000);
  await gate.admit(req('good'));
  t.equal(b.events('auth').length, 4, 'verdict-cache-sec passed: asked again');
  t.equal(gate.stats.cacheHits, 6);
  gate.close();
});

t.test('concurrent requests of one viewer ask once', async (t) => {
  const b = await startBilling();
  t.teardown(b.close);
  const { gate } = gateWith();
  gate.setServer(server(b));
  const all = await Promise.all(Array.from({ length: 20 }, () => gate.admit(req('x'))));
  t.ok(all.every((a) => a.ok));
  t.equal(b.events('auth').length, 1);
  t.equal(gate.sessions.size, 1, 'one session');
  gate.close();
});

t.test(
  'servers in order, by login prefix and suffix; a failing server passes to the next',
  async (t) => {
    const first = await startBilling(() => ({ status: 500 }));
    const second = await startBilling(() => ({ status: 200 }));
    const resellers = await startBilling(() => ({ status: 200 }));
    t.teardown(() => Promise.all([first.close(), second.close(), resellers.close()]));
    const { gate } = gateWith();
    gate.setServer(server(second, { id: 2, order: 5 }));
    gate.setServer(server(first, { id: 1, order: 1 }));
    gate.setServer(server(resellers, { id: 3, order: 0, loginPrefix: 'rs-', loginSuffix: '@tv' }));
    gate.setServer(server(resellers, { id: 4, order: 0, enabled: false }));
    t.match(await gate.admit(req('viewer1')), { ok: true });
    t.equal(first.events('auth').length, 1, 'lower order first');
    t.equal(second.events('auth').length, 1, 'then the next after a 500');
    t.equal(resellers.events('auth').length, 0, 'the prefixed server does not see it');
    t.match(await gate.admit(req('', { login: 'rs-ann@tv', password: 'pw' })), {
      ok: true,
      query: 'login=rs-ann%40tv&password=pw',
    });
    const r = resellers.events('auth')[0]!;
    t.equal(r.query.get('login'), 'rs-ann@tv');
    t.equal(r.query.get('password'), 'pw');
    t.equal(first.events('auth').length, 1, 'a prefixed login goes to its server only');
    t.match(await gate.admit(req('', { login: 'rs-bob@other', password: 'pw' })), { ok: true });
    t.equal(resellers.events('auth').length, 1, 'a login without the suffix is not sent there');
    gate.deleteServer(1);
    gate.deleteServer(2);
    t.match(await gate.admit(req('', { login: 'carl', password: 'pw' })), {
      ok: false,
      message: /no billing server serves this login/,
    });
    gate.close();
  },
);

t.test('templates: query, POST body, headers', async (t) => {
  const b = await startBilling(() => ({
    status: 200,
    type: 'application/json',
    body: '{"res":{"ok":"yes"}}',
  }));
  t.teardown(b.close);
  const { gate } = gateWith();
  gate.setServer(
    server(b, {
      requestQuery: 'op={event}&k={secret}',
      requestBody: '{"user":"{login}","stream":"{stream}","from":"{ip}"}',
      requestHeaders: [
        ['X-Api-Key', 'k-{secret}'],
        ['X-Stream', '{stream}'],
      ],
      reply: { format: 'json', okPath: 'res.ok', okValue: 'yes', reasonPath: '' },
    }),
  );
  t.match(await gate.admit(req('a"b')), { ok: true });
  const r = b.requests[0]!;
  t.equal(r.method, 'POST');
  t.equal(r.query.get('op'), 'auth');
  t.equal(r.query.get('k'), 's3cret');
  t.equal(r.headers['content-type'], 'application/json');
  t.same(JSON.parse(r.body), { user: 'a"b', stream: 'news', from: '10.1.1.1' });
  t.equal(r.headers['x-api-key'], 'k-s3cret');
  t.equal(r.headers['x-stream'], 'news');
  gate.close();
});

t.test('billing unavailable: each policy, within the time-out', async (t) => {
  let mode: 'ok' | 'hang' | 'garbage' = 'ok';
  const b = await startBilling(() =>
    mode === 'ok'
      ? { status: 200, body: '{"allowed":true}' }
      : mode === 'hang'
        ? { hang: true }
        : { body: '<<<' },
  );
  t.teardown(b.close);
  for (const policy of ['deny', 'allow', 'keep'] as const) {
    const { gate, clock } = gateWith({ whenUnavailable: policy });
    gate.setServer(
      server(b, {
        timeoutMs: 1000,
        reply: { format: 'json', okPath: '', okValue: '', reasonPath: '' },
      }),
    );
    mode = 'ok';
    await gate.admit(req('known'));
    clock.advance(61_000);
    mode = 'hang';
    const started = performance.now();
    const known = await gate.admit(req('known'));
    const ms = performance.now() - started;
    t.ok(
      ms >= 900 && ms < 3000,
      `${policy}: a hung server costs the time-out (${Math.round(ms)} ms)`,
    );
    mode = 'garbage';
    const fresh = await gate.admit(req('fresh'));
    if (policy === 'deny') {
      t.match(known, { ok: false, message: /billing unavailable/ });
      t.match(fresh, { ok: false });
    } else if (policy === 'allow') {
      t.match(known, { ok: true });
      t.match(fresh, { ok: true });
    } else {
      t.match(known, { ok: true }, 'keep: the last verdict holds');
      t.match(fresh, { ok: false, message: /billing unavailable/ }, 'keep: none before, refused');
    }
    t.equal(gate.stats.unavailable, 2);
    gate.close();
  }
});

t.test('a redirect loop is no verdict, and bounded', async (t) => {
  const b = await startBilling((r) => ({
    status: 302,
    headers: { location: `${r.path}?again=1` },
  }));
  t.teardown(b.close);
  const { gate } = gateWith({ whenUnavailable: 'deny' });
  gate.setServer(server(b));
  t.match(await gate.admit(req('x')), { ok: false, status: 403, message: /unavailable/ });
  t.ok(b.requests.length <= 21, `${b.requests.length} requests`);
  gate.close();
});

t.test('sessions: accounting start, interim, stop with bytes; idle close', async (t) => {
  const b = await startBilling();
  t.teardown(b.close);
  const { gate, clock } = gateWith({ interimMs: 30_000, idleMs: 20_000 });
  gate.setServer(server(b));
  const res1 = fakeResponse();
  const a = await gate.admit({ ...req('v'), res: res1 });
  t.ok(a.ok && a.session);
  const [start] = await b.waitFor((r) => r.query.get('event') === 'start');
  t.equal(start!.query.get('session'), a.ok ? a.session!.id : '');
  t.equal(start!.query.get('bytes'), '0');
  res1.finish(5000);
  const res2 = fakeResponse();
  await gate.admit({ ...req('v'), res: res2 });
  // An open response keeps the session open past the idle time.
  for (let i = 0; i < 30; i++) clock.advance(1000);
  t.equal(gate.sessions.size, 1, 'open while a response is in flight');
  const [interim] = await b.waitFor((r) => r.query.get('event') === 'interim');
  t.equal(interim!.query.get('bytes'), '5000');
  t.equal(interim!.query.get('duration'), '30');
  res2.finish(7000);
  for (let i = 0; i < 21; i++) clock.advance(1000);
  t.equal(gate.sessions.size, 0, 'closed after session-idle-sec without requests');
  const [stop] = await b.waitFor((r) => r.query.get('event') === 'stop');
  t.equal(stop!.query.get('bytes'), '12000');
  t.equal(stop!.query.get('duration'), '50', 'idle from the last response end (30 s)');
  t.equal(stop!.query.get('stream'), 'news');
  gate.close();
});

t.test('accounting off on the server: no notifications', async (t) => {
  const b = await startBilling();
  t.teardown(b.close);
  const { gate } = gateWith();
  gate.setServer(server(b, { accounting: false }));
  const a = await gate.admit(req('v'));
  t.ok(a.ok);
  gate.close();
  await gate.admit(req('w'));
  t.same(
    b.requests.map((r) => r.query.get('event')),
    ['auth', 'auth'],
  );
});

t.test(
  'kick: the session ends, its responses are cut, its viewer refused for kick-sec',
  async (t) => {
    const b = await startBilling();
    t.teardown(b.close);
    const { gate, clock } = gateWith({ kickMs: 60_000 });
    gate.setServer(server(b));
    const res = fakeResponse();
    const a = await gate.admit({ ...req('v'), res });
    if (!a.ok || !a.session) throw new Error('not admitted');
    t.ok(gate.kick(a.session.id));
    t.ok(res.destroyed, 'the open response is cut');
    t.equal(gate.sessions.size, 0);
    t.match(await gate.admit(req('v')), {
      ok: false,
      status: 403,
      message: /ended by the operator/,
    });
    t.match(await gate.admit({ ...req('v'), stream: 'other' }), { ok: true }, 'other streams play');
    clock.advance(60_001);
    t.match(await gate.admit(req('v')), { ok: true }, 'after kick-sec, asked afresh');
    t.equal(gate.kick('nope'), undefined);
    await b.waitFor((r) => r.query.get('event') === 'stop');
    gate.close();
  },
);

t.test('user-default.max-sessions', async (t) => {
  const b = await startBilling();
  t.teardown(b.close);
  const { gate } = gateWith();
  gate.setServer(server(b));
  gate.maxSessions = 2;
  t.match(await gate.admit({ ...req('v'), stream: 'a' }), { ok: true });
  t.match(await gate.admit({ ...req('v'), stream: 'b' }), { ok: true });
  t.match(await gate.admit({ ...req('v'), stream: 'c' }), {
    ok: false,
    message: /Too many sessions/,
  });
  t.match(await gate.admit({ ...req('v'), stream: 'a' }), { ok: true }, 'an open session goes on');
  t.match(
    await gate.admit({ ...req('w'), stream: 'c' }),
    { ok: true },
    'another viewer is not counted',
  );
  gate.close();
});

t.test('switching off closes every session and tells the listeners', async (t) => {
  const b = await startBilling();
  t.teardown(b.close);
  const { gate } = gateWith();
  let changes = 0;
  gate.onChange(() => changes++);
  const ended: string[] = [];
  gate.onSessionEnd((stream, ip) => ended.push(`${stream} ${ip}`));
  gate.setServer(server(b));
  t.equal(changes, 1);
  await gate.admit(req('v'));
  gate.setServer(server(b, { name: 'renamed' }));
  t.equal(changes, 1, 'still active: no change');
  gate.deleteServer(1);
  t.equal(changes, 2);
  t.equal(gate.sessions.size, 0);
  t.same(ended, ['news 10.1.1.1'], 'the session end is told (the archive releases its slot)');
  await b.waitFor((r) => r.query.get('event') === 'stop');
});

t.test('viewer passes for the native engine follow verdicts and sessions', async (t) => {
  const b = await startBilling();
  t.teardown(b.close);
  const { gate, clock } = gateWith({ verdictCacheMs: 60_000, idleMs: 30_000 });
  const log: string[] = [];
  let use: { query: string; ip: string; stream: string; requests: number; bytes: number }[] = [];
  gate.usePasses({
    setGated: (on) => log.push(`gated ${on}`),
    grant: (q, ip, stream, ttl) => log.push(`grant ${q} ${ip} ${stream} ${ttl}`),
    revoke: (q, ip, stream) => log.push(`revoke ${q} ${ip} ${stream}`),
    revokeAll: () => log.push('revokeAll'),
    takePassUse: () => {
      const u = use;
      use = [];
      return u;
    },
  });
  t.same(log.splice(0), ['gated false']);
  gate.setServer(server(b));
  t.same(log.splice(0), ['revokeAll', 'gated true'], 'switching on gates the engine');
  const a = await gate.admit(req('v'));
  if (!a.ok || !a.session) throw new Error('not admitted');
  t.same(log.splice(0), ['grant token=v 10.1.1.1 news 60000'], 'a pass for the cached verdict');
  clock.advance(20_000);
  await gate.admit(req('v'));
  t.same(log.splice(0), ['grant token=v 10.1.1.1 news 40000'], 'renewed up to the same end');
  // The engine answered two requests: they keep the session alive and count.
  for (let i = 0; i < 9; i++) {
    use = [{ query: 'token=v', ip: '10.1.1.1', stream: 'news', requests: 2, bytes: 1000 }];
    clock.advance(1000);
  }
  t.equal(gate.sessions.size, 1, 'native requests keep the session open');
  t.equal(a.session.requests, 2 + 18);
  t.equal(gate.sessions.bytesOf(a.session), 9000);
  t.ok(gate.kick(a.session.id));
  t.same(log.splice(0), ['revoke token=v 10.1.1.1 news'], 'a kicked session loses its pass');
  await gate.admit(req('w'));
  log.splice(0);
  for (let i = 0; i < 31; i++) clock.advance(1000);
  t.equal(gate.sessions.size, 0);
  t.same(log.splice(0), ['revoke token=w 10.1.1.1 news'], 'an idle session loses its pass');
  gate.setServer(server(b, { name: 'changed' }));
  t.same(log.splice(0), ['revokeAll', 'gated true'], 'any change revokes every pass');
  gate.configure({ ...SETTINGS, verdictCacheMs: 1000, denialCacheMs: 0 });
  log.splice(0);
  gate.deleteServer(1);
  t.same(log.splice(0), ['revokeAll', 'gated false']);
  gate.close();
});
