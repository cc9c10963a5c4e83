// A stream input moved to a port another program holds (issue 36, item 2) through the real
// server: the PATCH says the apply failed and why, the old listener keeps receiving, and once the
// port is free the reconciler's retry moves the input there (udp and srt, ffmpeg as sender).
import type { ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { createServer, Server } from 'node:net';
import t, { type Test } from 'tap';
import { tempDir as serverTemp, startServer, waitFor } from '../helpers/server.ts';
import { freePort, makeFixture, peer, playFixture } from '../helpers/stream-host.ts';

const dir = await serverTemp(t);
const fixture = makeFixture(dir);

type Rec = Record<string, unknown>;

/** A UDP socket holding `port` on every address, as another program would; the function
 *  returned frees it (once; the test's teardown frees it too). */
async function hold(t: Test, port: number, proto: 'udp' | 'tcp'): Promise<() => void> {
  const s = proto === 'udp' ? createSocket('udp4') : createServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    if (s instanceof Server) s.listen(port, () => resolve());
    else s.bind(port, () => resolve());
  });
  let open = true;
  const free = (): void => {
    if (open) s.close();
    open = false;
  };
  t.teardown(free);
  return free;
}

async function statusOf(url: string): Promise<Rec> {
  const doc = (await (await fetch(`${url}/data/status`)).json()) as Rec;
  const list = (doc['resources'] ?? doc['streams']) as Rec[] | undefined;
  const found = list?.find((r) => r['kind'] === 'stream' || r['stream-name'] === 'moved');
  if (!found) throw new Error(`no stream in /data/status: ${JSON.stringify(doc).slice(0, 400)}`);
  return found;
}

/** Bytes the input's transport has received. */
async function bytesIn(url: string): Promise<number> {
  const s = await statusOf(url);
  const inputs = ((s['status'] as Rec | undefined)?.['inputs'] ?? s['inputs']) as Rec[];
  return Number((inputs[0]!['transport'] as Rec | undefined)?.['bytes'] ?? 0);
}

async function rising(url: string, what: string): Promise<void> {
  const first = await waitFor('the stream in /data/status', () => bytesIn(url));
  await waitFor(what, async () => ((await bytesIn(url)) > first ? true : undefined), 10_000);
}

interface Kind {
  type: string;
  /** What the input listens on (the holder takes the same). */
  proto: 'udp' | 'tcp';
  input(port: number): Rec;
  send(t: Test, port: number): ChildProcess;
}

const KINDS: Kind[] = [
  {
    type: 'udp',
    proto: 'udp',
    input: (port) => ({ type: 'udp', port }),
    send: (t, port) => playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${port}?pkt_size=1316`),
  },
  {
    type: 'srt',
    proto: 'udp',
    input: (port) => ({ type: 'srt', 'listen-mode': true, port }),
    send: (t, port) => playFixture(t, fixture, 'mpegts', `srt://127.0.0.1:${port}?mode=caller`),
  },
  {
    type: 'rtmp',
    proto: 'tcp',
    input: (port) => ({ type: 'rtmp', url: `rtmp://@127.0.0.1:${port}/live/k` }),
    send: (t, port) =>
      peer(t, 'ffmpeg', [
        ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', fixture],
        ...['-c', 'copy', '-f', 'flv', `rtmp://127.0.0.1:${port}/live/k`],
      ]),
  },
];

for (const k of KINDS) {
  t.test(
    `${k.type}: a move to a held port keeps the old listener, the retry moves it`,
    async (t) => {
      const oldPort = await freePort();
      const newPort = await freePort();
      const srv = await startServer(t, {
        config: {
          stream: [{ id: 1, 'stream-name': 'moved', pause: false, input: [k.input(oldPort)] }],
        },
      });
      const oldSender = k.send(t, oldPort);
      await rising(srv.url, 'bytes on the old port');
      await waitFor('the stream to run', async () =>
        (await statusOf(srv.url))['state'] === 'running' ? true : undefined,
      );

      const free = await hold(t, newPort, k.proto);
      const r = await fetch(`${srv.url}/config/stream/1`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ input: [k.input(newPort)] }),
      });
      t.equal(r.status, 200, 'the PATCH is accepted (the apply follows)');
      const st = await waitFor('the failed apply in /data/status', async () => {
        const s = await statusOf(srv.url);
        return s['outcome'] === 'failed' ? s : undefined;
      });
      const error = String(st['error']);
      t.match(
        error,
        new RegExp(`input 0 \\(${k.type}\\) cannot listen on [^ ]*:${newPort}`),
        'names input and port',
      );
      t.match(error, /already in use/, 'says the errno in words');
      t.match(
        error,
        new RegExp(`keeps receiving on [^ ]*:${oldPort}`),
        'says the old port still serves',
      );
      t.equal(st['state'], 'running', 'the stream still runs');
      const input = ((st['status'] as Rec)['inputs'] as Rec[])[0]!;
      t.equal(input['moveError'], error, 'the input says why it did not move');
      await rising(srv.url, 'bytes still arriving on the old port');
      t.pass('the old port still receives after the failed move');

      free();
      const moved = await waitFor(
        'the retry to move the input',
        async () => {
          const s = await statusOf(srv.url);
          return s['error'] === undefined ? s : undefined;
        },
        15_000,
      );
      t.equal(moved['outcome'], 'updated', 'the retry applied the change');
      const input2 = ((moved['status'] as Rec)['inputs'] as Rec[])[0]!;
      t.equal(input2['moveError'], undefined, 'the moved input has no move error');
      oldSender.kill('SIGKILL');
      const newSender = k.send(t, newPort);
      await rising(srv.url, 'bytes arriving on the new port');
      t.pass('the new port receives');
      // libsrt lets go of a closed listener's UDP socket a moment later, from its own thread.
      const freeOld = await waitFor('the old port to be released', () =>
        hold(t, oldPort, k.proto).catch(() => undefined),
      );
      freeOld();
      t.pass('the old port is released');
      newSender.kill('SIGKILL');
    },
  );
}
