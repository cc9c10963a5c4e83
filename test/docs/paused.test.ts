// A stream without `"pause": false` comes up paused (spec 1's default) and says why and what to
// do, in /data/stream and /data/status; set to false it runs and the message goes.
import t from 'tap';
import { PAUSED_MESSAGE } from '../../src/drivers/stream/instance.ts';
import { startServer, waitFor } from '../helpers/server.ts';

const get = async (url: string) => (await fetch(url)).json() as Promise<Record<string, unknown>>;

t.test('a paused stream says so', async (t) => {
  const srv = await startServer(t, {
    config: { stream: [{ id: 1, 'stream-name': 'quiet', input: [{ type: 'udp', port: 1234 }] }] },
  });
  t.match(await get(`${srv.url}/data/stream/1`), { state: 'paused', message: PAUSED_MESSAGE });
  t.match(JSON.stringify(await get(`${srv.url}/data/status`)), PAUSED_MESSAGE, 'in the status');
  const edit = await fetch(`${srv.url}/config/stream/1`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ pause: false }),
  });
  t.equal(edit.status, 200, 'pause set to false');
  const running = await waitFor('the stream started', async () => {
    const s = await get(`${srv.url}/data/stream/1`);
    return s['state'] === 'paused' ? undefined : s;
  });
  t.notOk(running['message'] === PAUSED_MESSAGE, `no pause message once ${running['state']}`);
});
