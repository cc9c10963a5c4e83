// Worker streams do what main-thread streams do where the main thread's own state decides it
// (issue 37): each case is a difference the suite found when run with stream workers.
import { join } from 'node:path';
import t from 'tap';
import { freePort, startServer, tempDir, waitFor } from '../helpers/server.ts';

const START_TIMEOUT_MS = 40_000;

interface Status {
  thread?: string;
  inputs?: { message?: string }[];
}

t.test('server.ffmpeg-path reaches the stream workers, at start and when changed', async (t) => {
  const tmp = await tempDir(t, 'sluice-plane-ffmpeg-');
  const first = join(tmp, 'no-ffmpeg-here');
  const second = join(tmp, 'nor-here');
  const srv = await startServer(t, {
    config: {
      server: { 'stream-workers': 1, 'ffmpeg-path': first },
      stream: [
        {
          id: 1,
          'stream-name': 'gen',
          pause: false,
          input: [{ type: 'test', width: 160, height: 90, 'frame-rate': 10 }],
        },
      ],
    },
  });
  const messageNaming = (path: string) =>
    waitFor(
      `the input message naming ${path}`,
      async () => {
        const r = await fetch(`${srv.url}/data/stream/1`);
        const s = r.ok ? ((await r.json()) as Status) : {};
        return s.inputs?.[0]?.message?.includes(path) ? s : undefined;
      },
      START_TIMEOUT_MS,
    );
  const s = await messageNaming(first);
  t.equal(s.thread, 'stream worker 0', 'the stream runs in the worker');
  t.match(s.inputs?.[0]?.message, /does not exist/);
  const patch = await fetch(`${srv.url}/config/server`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ 'ffmpeg-path': second }),
  });
  t.equal(patch.status, 200, await patch.clone().text());
  await messageNaming(second);
  t.pass('the next start in the worker runs the new path');
});

t.test(
  'a paused worker stream is starting at once after a resume, paused at once after a pause',
  async (t) => {
    const srv = await startServer(t, {
      config: {
        server: { 'stream-workers': 1 },
        stream: [
          {
            id: 2,
            'stream-name': 'side',
            input: [{ type: 'udp', address: '127.0.0.1', port: await freePort() }],
          },
        ],
      },
    });
    const status = async () => {
      const r = await fetch(`${srv.url}/data/stream/2`);
      return r.ok ? ((await r.json()) as Status & { state: string; message?: string }) : undefined;
    };
    const patch = (pause: boolean) =>
      fetch(`${srv.url}/config/stream/2`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ pause }),
      });
    const first = await waitFor('the paused stream listed', status, START_TIMEOUT_MS);
    t.equal(first.thread, 'stream worker 0');
    t.equal(first.state, 'paused');
    t.equal((await patch(false)).status, 200);
    // Read right after the write's answer, as the stream page does.
    const resumed = await status();
    t.equal(resumed?.state, 'starting', 'starting');
    t.notOk(resumed?.message, 'no pause message');
    t.equal((await patch(true)).status, 200);
    const paused = await status();
    t.equal(paused?.state, 'paused', 'paused');
    t.equal(paused?.message, 'paused: set pause to false to start it');
  },
);

t.test('a renamed worker stream ends its HTTP-TS clients; the new name plays', async (t) => {
  const srv = await startServer(t, {
    config: {
      server: { 'stream-workers': 1 },
      stream: [
        {
          id: 3,
          'stream-name': 'before',
          pause: false,
          'ott-http': 1,
          input: [{ type: 'test', width: 160, height: 90, 'frame-rate': 10, 'gop-interval': 10 }],
        },
      ],
    },
  });
  const read = async (name: string) => {
    const res = await fetch(`${srv.url}/${name}/mpegts`);
    if (res.status !== 200) return undefined;
    const reader = res.body!.getReader();
    const first = await reader.read();
    return first.done ? undefined : reader;
  };
  const old = await waitFor('HTTP-TS of the stream', () => read('before'), START_TIMEOUT_MS);
  const patch = await fetch(`${srv.url}/config/stream/3`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ 'stream-name': 'after' }),
  });
  t.equal(patch.status, 200, await patch.clone().text());
  // The old name's client gets the end of the stream, as on the main thread.
  const ended = await waitFor(
    'the old client’s end',
    async () => {
      const r = await Promise.race([
        old.read(),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 500)),
      ]);
      return r?.done ? true : undefined;
    },
    START_TIMEOUT_MS,
  );
  t.ok(ended, 'the client of the old name is ended');
  const fresh = await waitFor('HTTP-TS of the new name', () => read('after'), START_TIMEOUT_MS);
  let got = 0;
  while (got < 188 * 20) {
    const { value, done } = await fresh.read();
    if (done) break;
    got += value.length;
  }
  await fresh.cancel();
  t.ok(got >= 188 * 20, `the new name's client gets packets (${got} bytes)`);
});
