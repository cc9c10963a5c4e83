// Viewer tokens are secrets (issue 35): a viewer plays with a token from 127.0.0.2 (not
// anonymous) and a relay stream pulls a URL carrying another token; then viewer- and admin-role
// accounts, signed in with Digest from 127.0.0.2, read the session list, the alerts, the alert
// and dashboard event streams and end the session by its id — and no full token is in any of
// them, nor in any line the server logged (at debug, so Fastify's request lines are in).
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { tokenFingerprint } from '../../src/util/credentials.ts';
import { startBilling } from '../helpers/billing.ts';
import { type DigestAccount, digestFetch, digestOpen } from '../helpers/digest-client.ts';
import { liveTsConfig } from '../helpers/ott.ts';
import { RawClient } from '../helpers/raw-http.ts';
import { freePort, startServer, waitFor } from '../helpers/server.ts';

/** An address on the loopback interface that is not 127.0.0.1, so not anonymous. */
const REMOTE = '127.0.0.2';
const EVENTS_TIMEOUT_MS = 20_000;
const TOKEN = `viewer-${randomBytes(16).toString('hex')}`;
const RELAY_TOKEN = `relay-${randomBytes(16).toString('hex')}`;
const admin: DigestAccount = { login: 'boss', password: 'b0ss-pw', from: REMOTE };
const viewer: DigestAccount = { login: 'watcher', password: 'w4tch-pw', from: REMOTE };
const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

/** The text of an event stream until `done` says it has what it needs (bounded in time). */
async function eventsUntil(res: IncomingMessage, done: (text: string) => boolean) {
  res.setEncoding('utf8');
  let text = '';
  const timer = setTimeout(() => res.destroy(), EVENTS_TIMEOUT_MS);
  try {
    for await (const chunk of res) {
      text += chunk;
      if (done(text)) break;
    }
  } catch {
    // destroyed at the time limit: the assertions below say what was missing
  } finally {
    clearTimeout(timer);
    res.destroy();
  }
  return text;
}

t.test('no full token in sessions, alerts, event streams or logs', async (t) => {
  const billing = await startBilling((r) =>
    r.query.get('event') !== 'auth' || r.query.get('token') === TOKEN
      ? { status: 200 }
      : { status: 403, body: 'no subscription' },
  );
  t.teardown(billing.close);
  const base = liveTsConfig();
  (base.stream as Record<string, unknown>[])[0]!['ott-http-trace'] = true;
  const port = await freePort();
  const srv = await startServer(t, {
    port,
    env: { SLUICE_LOG_LEVEL: 'debug' },
    config: {
      ...base,
      user: [
        { login: admin.login, password: admin.password, role: 'admin' },
        { login: viewer.login, password: viewer.password, role: 'viewer' },
      ],
      cs: { server: [{ id: 1, name: 'billing', password: 'k', url: billing.url }] },
    },
  });
  let log = '';
  srv.proc.stdout!.on('data', (b: Buffer) => {
    log += b.toString();
  });

  // A relay whose input URL carries a token (here to a stream that does not exist: 404).
  const relay = await fetch(`${srv.url}/config/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      id: 2,
      'stream-name': 'relay',
      pause: false,
      input: [
        { type: 'hls', uri: `http://127.0.0.1:${port}/nosuch/index.m3u8?token=${RELAY_TOKEN}` },
      ],
    }),
  });
  t.equal(relay.status, 201, 'the relay stream added');

  const c = await RawClient.open(srv.port, REMOTE);
  t.teardown(() => c.close());
  const playlist = await waitFor(
    'the live playlist with the token',
    async () => {
      c.send(get(`/live/index.m3u8?token=${TOKEN}`));
      const r = await c.next();
      return r.status === 200 ? r.body.toString() : undefined;
    },
    30_000,
  );
  const segment = playlist.split('\n').find((l) => l.startsWith('seg-'))!;
  c.send(get(`/live/${segment}`));
  t.equal((await c.next()).status, 200, 'the viewer plays');

  const fingerprint = tokenFingerprint(TOKEN);
  let sessionId = '';
  for (const who of [viewer, admin]) {
    const r = await digestFetch(`${srv.url}/data/sessions`, who);
    t.equal(r.status, 200, `${who.login} lists the sessions`);
    t.notOk(r.body.includes(TOKEN), `${who.login}: no token in /data/sessions`);
    const mine = (JSON.parse(r.body) as { sessions: Record<string, unknown>[] }).sessions.find(
      (s) => s['ip'] === REMOTE,
    );
    t.match(mine, { viewer: fingerprint, credential: 'token', stream: 'live' });
    sessionId = String(mine?.['id']);
  }

  // What the relay's input says (its URL in its message) is in the stream's data: masked there.
  const relayData = await waitFor('the relay input message', async () => {
    const r = await digestFetch(`${srv.url}/data/stream/2`, viewer);
    return r.status === 200 && r.body.includes('/nosuch/index.m3u8') ? r.body : undefined;
  });
  t.notOk(relayData.includes(RELAY_TOKEN), 'no relay token in /data/stream/2');
  for (const path of ['/data/stream', '/data/status']) {
    const r = await digestFetch(`${srv.url}${path}`, viewer);
    t.equal(r.status, 200, `the viewer reads ${path}`);
    t.notOk(r.body.includes(RELAY_TOKEN), `no relay token in ${path}`);
  }
  const relayAlert = (text: string) => text.includes('"subject":"relay"');
  const alerts = await waitFor('the relay input alert', async () => {
    const r = await digestFetch(`${srv.url}/data/alerts`, viewer);
    return relayAlert(r.body) ? r.body : undefined;
  });
  t.notOk(alerts.includes(RELAY_TOKEN), 'no relay token in /data/alerts');
  t.ok(alerts.includes(tokenFingerprint(RELAY_TOKEN)), "the alert names the token's fingerprint");

  const alertEvents = await eventsUntil(
    await digestOpen(`${srv.url}/data/alerts/events`, viewer),
    relayAlert,
  );
  t.ok(relayAlert(alertEvents), 'the alert events stream has the relay alert');
  t.notOk(alertEvents.includes(RELAY_TOKEN), 'no relay token in /data/alerts/events');
  const feed = await eventsUntil(await digestOpen(`${srv.url}/data/events`, viewer), (s) =>
    s.includes('event: alerts'),
  );
  t.match(feed, /event: snapshot[\s\S]*event: alerts/, 'the dashboard feed opened');
  for (const secret of [TOKEN, RELAY_TOKEN]) {
    t.notOk(feed.includes(secret), 'no token in /data/events');
  }

  const del = await digestFetch(`${srv.url}/data/sessions/${sessionId}`, admin, {
    method: 'DELETE',
  });
  t.equal(del.status, 200, 'the admin ends the session by its id');
  t.notOk(del.body.includes(TOKEN), 'no token in the answer');
  c.send(get(`/live/${segment}`));
  t.equal((await c.next()).status, 403, 'the viewer is refused after that');

  const lines = log.split('\n').filter(Boolean);
  t.ok(
    lines.some((l) => l.includes('incoming request') && l.includes(`token=${fingerprint}`)),
    "Fastify's request lines are in the log, the token as its fingerprint",
  );
  t.ok(
    lines.some((l) => l.includes('"ott http"')),
    'the ott-http-trace lines are in the log',
  );
  const leaking = lines.filter((l) => l.includes(TOKEN) || l.includes(RELAY_TOKEN));
  t.same(leaking.slice(0, 5), [], `no token in any of the ${lines.length} lines`);
  t.ok(
    lines.some((l) => /"msg":"viewer session (start|stop)"/.test(l)),
    'the session start/stop lines are in the log (and hold no token)',
  );
});
