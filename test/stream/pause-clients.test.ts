// HTTP-TS clients when the stream is paused or deleted: each client's body ends cleanly (curl
// exits 0, not "partial file"), a request to a paused stream gets 503 JSON instead of a
// connection that never sends a byte, and un-pausing serves again.
import { spawn } from 'node:child_process';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import {
  freePort,
  httpFor,
  makeFixture,
  makeHost,
  playFixture,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir, 4);
const host = makeHost(dir);
const base = await httpFor(t, host.router);

/** curl reading `url` until the server ends the body; resolves with its exit code and bytes. */
function curl(url: string): { done: Promise<{ code: number | null; bytes: number }> } {
  const p = spawn('curl', ['-s', '-o', '/dev/null', '-w', '%{size_download}', '-m', '20', url]);
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  t.teardown(() => {
    if (p.exitCode === null) p.kill('SIGKILL');
  });
  return {
    done: new Promise((resolve) => p.on('close', (code) => resolve({ code, bytes: Number(out) }))),
  };
}

/** Bytes the stream takes in while its clients are connected: each client is sent all of them,
 *  well over the 10 000 bytes each must have read when its body ends. */
const CLIENT_BYTES = 40_000;

/** Wait until the stream's input has taken in CLIENT_BYTES more than now. */
async function inputGrows(s: StreamInstance, what: string): Promise<void> {
  const bytes = () =>
    Number((s.status()['inputs'] as { transport: { bytes: number } }[])[0]!.transport.bytes);
  const from = bytes();
  await waitFor(() => bytes() >= from + CLIENT_BYTES, 5000, what);
}

t.test('pause ends clients cleanly, paused answers 503, delete ends clients', async (t) => {
  const port = await freePort();
  playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${port}?pkt_size=1316`);
  const spec = { 'stream-name': 'pz', input: [{ type: 'udp', port }] };
  const s = (await new StreamDriver().create(streamResource(spec), host)) as StreamInstance;
  t.teardown(() => s.close());
  await waitFor(() => s.state() === 'running', 8000, 'running');
  const clients = [curl(`${base}/pz/mpegts`), curl(`${base}/pz/mpegts`)];
  await waitFor(() => (s.status()['httpTs'] as { clients: number }).clients === 2, 5000, 'two');
  await inputGrows(s, 'the clients reading');

  await s.update(streamResource({ ...spec, pause: true }), [
    { path: 'pause', before: false, after: true, apply: 'hot' },
  ]);
  for (const c of clients) {
    const r = await c.done;
    t.equal(r.code, 0, 'curl ended cleanly when the stream was paused');
    t.ok(r.bytes > 10_000, `and had read ${r.bytes} bytes`);
  }
  const res = await fetch(`${base}/pz/mpegts`, { signal: AbortSignal.timeout(3000) });
  t.equal(res.status, 503, 'a paused stream answers 503');
  t.match(await res.json(), { status: 503, message: /paused/ });

  await s.update(streamResource(spec), [
    { path: 'pause', before: true, after: false, apply: 'hot' },
  ]);
  await waitFor(() => s.state() === 'running', 8000, 'running again');
  const again = curl(`${base}/pz/mpegts`);
  await waitFor(() => (s.status()['httpTs'] as { clients: number }).clients === 1, 5000, 'one');
  await inputGrows(s, 'the client reading');
  await s.close();
  const r = await again.done;
  t.equal(r.code, 0, 'deleting the stream ends the client cleanly');
  t.ok(r.bytes > 10_000, `after ${r.bytes} bytes`);
});
