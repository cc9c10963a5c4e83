// `http-server.realm` and `nonce-lifetime-sec` do what the config reference says, through the
// whole server (src/main.ts in this process, a ManualClock for time): the realm is in every
// Digest challenge, a nonce older than the configured lifetime is refused as stale, and a
// change of either applies in place.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { digestResponse, parseDigestHeader } from '../../../src/api/auth/digest.ts';
import { silentLogger } from '../../../src/log.ts';
import { startServer } from '../../../src/main.ts';
import { ManualClock } from '../../../src/util/clock.ts';
import { freePort, tempDir, waitFor } from '../../helpers/server.ts';

const LIFETIME_SEC = 20;
const MS = 1000;

t.test('realm and nonce lifetime come from the http-server record', async (t) => {
  const dir = await tempDir(t, 'sluice-auth-settings-');
  const port = await freePort();
  const config = join(dir, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      'http-server': {
        port,
        'bind-address': '127.0.0.1',
        realm: 'studio-7',
        'nonce-lifetime-sec': LIFETIME_SEC,
      },
      'epg-server': { port: await freePort(), 'bind-address': '127.0.0.1' },
      user: [{ login: 'ann', password: 'pw', role: 'admin' }],
    }),
  );
  const clock = new ManualClock();
  const server = await startServer({
    config,
    dataDir: join(dir, 'data'),
    log: silentLogger,
    clock,
  });
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${port}`;
  await waitFor('the admin API', async () =>
    (await fetch(`${base}/data/status`)).ok ? 1 : undefined,
  );

  // From 127.0.0.1 a request with credentials has them checked, so a bad header gets the
  // challenges.
  const challenge = async () => {
    const r = await fetch(`${base}/config`, { headers: { authorization: 'Digest bad="1"' } });
    await r.arrayBuffer();
    t.equal(r.status, 401);
    return parseDigestHeader(r.headers.get('www-authenticate')!.split(', Digest ')[0]!)!;
  };
  const signed = async (ch: Record<string, string>, nc: string) => {
    const uri = '/config';
    const response = digestResponse({
      algorithm: 'SHA-256',
      login: 'ann',
      realm: ch['realm']!,
      password: 'pw',
      method: 'GET',
      uri,
      nonce: ch['nonce']!,
      nc,
      cnonce: 'c0ffee',
    });
    const r = await fetch(`${base}${uri}`, {
      headers: {
        authorization:
          `Digest username="ann", realm="${ch['realm']}", nonce="${ch['nonce']}", uri="${uri}", ` +
          `algorithm=SHA-256, qop=auth, nc=${nc}, cnonce="c0ffee", response="${response}", ` +
          `opaque="${ch['opaque']}"`,
      },
    });
    await r.arrayBuffer();
    return r;
  };

  const ch = await challenge();
  t.equal(ch['realm'], 'studio-7', 'the realm of the config is in the challenge');
  t.equal((await signed(ch, '00000001')).status, 200, 'a fresh nonce is accepted');
  clock.advance((LIFETIME_SEC - 1) * MS);
  t.equal((await signed(ch, '00000002')).status, 200, 'still good just inside the lifetime');
  clock.advance(2 * MS);
  const stale = await signed(ch, '00000003');
  t.equal(stale.status, 401, `older than ${LIFETIME_SEC} s: refused (the default would be 300 s)`);
  t.match(stale.headers.get('www-authenticate'), /stale=true/, 'as stale');

  // Both settings are hot: an API edit takes effect without a restart.
  const patch = await fetch(`${base}/config/http-server`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ realm: 'studio-8', 'nonce-lifetime-sec': 3600 }),
  });
  t.equal(patch.status, 200);
  await patch.arrayBuffer();
  const next = await waitFor('the new realm', async () => {
    const c = await challenge();
    return c['realm'] === 'studio-8' ? c : undefined;
  });
  t.equal((await signed(next, '00000001')).status, 200);
  t.equal((await signed(ch, '00000004')).status, 401, 'an answer for the old realm is refused');
  clock.advance(LIFETIME_SEC * 2 * MS);
  t.equal((await signed(next, '00000002')).status, 200, 'the longer lifetime is in force');
});
