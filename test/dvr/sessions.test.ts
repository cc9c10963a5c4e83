// Archive sessions over real HTTP (spec 3): a session to now protects from its window start
// onward, chunks recorded while it is open included, and two viewers behind one address hold
// two sessions, one leaving never ending the other's protection.
import { Agent, get } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { TS_TRACK } from '../../src/dvr/index-db.ts';
import type { ArchiveStorage } from '../../src/dvr/storage.ts';
import { silentLogger } from '../../src/log.ts';
import { createOttService } from '../../src/ott/index.ts';
import type { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, startOttServer, TinyBus } from '../helpers/ott.ts';
import { feedPaced, GIB, hookHost, recordingHost, type TapLike, tempDir } from './helpers.ts';

/** A recording stream `s` on a real storage, served over loopback HTTP; the server's sockets
 *  are reported so a test can wait for a viewer's connection to be gone. */
async function served(t: TapLike) {
  const dir = tempDir(t);
  const { clock, host, storage } = await recordingHost(t, dir);
  const spec = { 'stream-name': 's', 'ott-hls': 1, 'ott-segment-duration': 2, 'dvr-storage': 1 };
  const bus = new TinyBus();
  const svc = new ArchivedOttService(
    createOttService({ name: 's', spec, bus, clock, log: silentLogger }),
    { ...hookHost(host), name: 's', spec: () => spec, state: () => 'running' },
  );
  t.teardown(() => svc.close());
  const { app, base } = await startOttServer(new Map([['s', svc]]));
  t.teardown(() => app.close());
  const sockets: Socket[] = [];
  app.server.on('connection', (s: Socket) => sockets.push(s));
  const stream = await makeTestStream(join(dir, 'a.ts'), { seconds: 16, gop: 25 });
  return { clock, storage, svc, bus, base, sockets, stream };
}

/** GET on the viewer's own keep-alive connection. */
function fetchOn(agent: Agent, url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

const chunks = (s: ArchiveStorage) =>
  s.index!.range('s', TS_TRACK, 0, Number.MAX_SAFE_INTEGER).map((r) => r.start_ms);

/** Disk figures far above max-usage (not below the emergency floor), grace elapsed. */
async function pressure(storage: ArchiveStorage, clock: ManualClock): Promise<void> {
  const deps = storage as unknown as { deps: { probe: () => Promise<unknown> } };
  deps.deps.probe = async () => ({ total: 100 * GIB, used: 95 * GIB, free: 5 * GIB });
  await storage.pass();
  clock.advance(61_000);
  await storage.pass(); // the one the pass timer started while the clock moved
  await storage.pass();
}

t.test('a session to now keeps the chunks recorded while it is open', async (t) => {
  const { clock, storage, svc, bus, base, stream } = await served(t);
  const half = stream.subarray(0, Math.floor(stream.length / 2 / 188) * 188);
  await feedPaced(bus, clock, half, 8);
  await svc.recorder!.settle();
  storage.flush();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const from = Math.ceil(chunks(storage)[1]! / 1000) * 1000; // the first chunk is outside
  const playlist = await fetchOn(agent, `${base}/s/index.m3u8?t=${from / 1000}`);
  t.match(playlist, /#EXT-X-ENDLIST/, 'an archive playlist');
  const listed = chunks(storage).filter((s) => s >= from);
  await feedPaced(bus, clock, stream.subarray(half.length), 8);
  await svc.recorder!.settle();
  storage.flush();
  const recorded = chunks(storage).filter((s) => s >= from);
  t.ok(recorded.length > listed.length, `${recorded.length - listed.length} chunks since`);
  await pressure(storage, clock);
  t.ok(storage.last.trimDeleted > 0, 'size cleanup removed the chunk before the window');
  t.same(
    chunks(storage).filter((s) => s >= from),
    recorded,
    'size cleanup left every chunk from the window start on',
  );
});

t.test('two viewers behind one address hold two sessions', async (t) => {
  const { clock, storage, svc, bus, base, sockets, stream } = await served(t);
  await feedPaced(bus, clock, stream, 16);
  await svc.recorder!.settle();
  storage.flush();
  const all = chunks(storage);
  const one = new Agent({ keepAlive: true, maxSockets: 1 });
  const two = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => one.destroy());
  t.teardown(() => two.destroy());
  const mid = Math.floor(all[Math.floor(all.length / 2)]! / 1000);
  await fetchOn(one, `${base}/s/index.m3u8?t=${mid}`);
  const twoSocket = sockets.length;
  await fetchOn(two, `${base}/s/index.m3u8?t=0`);
  t.equal(svc.sessions.size, 2, 'two sessions from 127.0.0.1');
  t.equal(storage.protectedRanges.length, 2, 'two protection slots');
  const gone = new Promise((r) => sockets[twoSocket]!.once('close', r));
  two.destroy();
  await gone;
  await new Promise((r) => setImmediate(r));
  t.equal(svc.sessions.size, 1, "the second viewer's session ended with its connection");
  t.equal(storage.protectedRanges[0]?.from, mid * 1000, "the first viewer's slot stays");
  await pressure(storage, clock);
  const left = chunks(storage);
  t.ok(left.length < all.length, 'size cleanup trimmed what no one watches');
  t.same(
    left.filter((s) => s >= mid * 1000),
    all.filter((s) => s >= mid * 1000),
    "the first viewer's window is whole",
  );
});
