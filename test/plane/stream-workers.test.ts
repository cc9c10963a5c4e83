// Stream workers through the real server: with `server.stream-workers` 2, two test-generator
// streams run in worker threads (status says which), their HLS plays through the main
// thread's listener (ffprobe reads it), HTTP-TS comes from a bus tap opened for the client,
// a PATCH reaches the worker, and a stream a worker cannot run yet (read by another stream)
// stays on the main thread and says why.

import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { deliveryStatus, ffprobeJson, KEYFRAME_EVERY_SECOND_INPUT } from '../helpers/ott.ts';
import { startServer, tempDir, waitFor } from '../helpers/server.ts';

const START_TIMEOUT_MS = 40_000;
const run = promisify(execFile);

const testStream = (id: number, name: string, extra: Record<string, unknown> = {}) => ({
  id,
  'stream-name': name,
  pause: false,
  'ott-hls': 1,
  'ott-http': 1,
  'ott-segment-duration': 1,
  input: [KEYFRAME_EVERY_SECOND_INPUT],
  ...extra,
});

t.test('streams run in stream workers and play through the main listener', async (t) => {
  const srv = await startServer(t, {
    config: {
      server: { 'stream-workers': 2 },
      stream: [testStream(1, 'one'), testStream(2, 'two')],
    },
  });
  const stream = async (id: number) => {
    const r = await fetch(`${srv.url}/data/stream/${id}`);
    return r.ok ? ((await r.json()) as Record<string, unknown>) : undefined;
  };
  await waitFor(
    'both streams running with three segments',
    async () => {
      for (const name of ['one', 'two']) {
        const r = await fetch(`${srv.url}/${name}/index.m3u8`);
        if (!r.ok || ((await r.text()).match(/#EXTINF/g)?.length ?? 0) < 3) return undefined;
      }
      return true;
    },
    START_TIMEOUT_MS,
  ).catch(async (err) => {
    throw new Error(
      `${(err as Error).message}\n${JSON.stringify(await stream(1))}\n${srv.output()}`,
    );
  });

  const one = await stream(1);
  const two = await stream(2);
  t.equal(one?.['state'], 'running');
  t.match(String(one?.['thread']), /^stream worker [01]$/, 'stream 1 runs in a worker');
  t.not(one?.['thread'], two?.['thread'], 'the two streams are spread over both workers');
  const names = readdirSync(`/proc/${srv.proc.pid}/task`).map((tid) =>
    readFileSync(`/proc/${srv.proc.pid}/task/${tid}/comm`, 'utf8').trim(),
  );
  t.ok(
    names.includes('sluice-js-0') && names.includes('sluice-js-1'),
    `two stream worker threads by name (${[...new Set(names)].join(', ')})`,
  );

  const metrics = await waitFor('both workers’ loops on /metrics', async () => {
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    return /sluice_eventloop_delay_seconds_count\{loop="stream-worker-1"\} [1-9]/.test(text)
      ? text
      : undefined;
  });
  t.match(metrics, /sluice_eventloop_delay_seconds_count\{loop="stream-worker-0"\} [1-9]/);
  t.match(metrics, /sluice_eventloop_delay_seconds_count\{loop="main"\} [1-9]/);

  const probe = (await ffprobeJson(`${srv.url}/one/index.m3u8`)) as {
    streams: { codec_type: string; width?: number }[];
  };
  t.ok(
    probe.streams.some((s) => s.codec_type === 'video' && s.width === 320),
    'ffprobe reads the worker stream’s HLS',
  );

  // HTTP-TS: the bus tap opens for the client and the bytes are TS.
  const ctl = new AbortController();
  const res = await fetch(`${srv.url}/two/mpegts`, { signal: ctl.signal });
  t.equal(res.status, 200);
  const reader = res.body!.getReader();
  let got = 0;
  let first: Uint8Array | undefined;
  while (got < 188 * 50) {
    const { value, done } = await reader.read();
    if (done) break;
    first ??= value;
    got += value.length;
  }
  ctl.abort();
  t.ok(got >= 188 * 50, `HTTP-TS sent ${got} bytes`);
  t.equal(first?.[0], 0x47, 'starting at a TS packet');

  // A change reaches the worker: the display name shows in its status.
  const patch = await fetch(`${srv.url}/config/stream/1`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ 'display-name': 'One' }),
  });
  t.equal(patch.status, 200, await patch.clone().text());
  await waitFor('the new display name in the worker’s snapshot', async () => {
    const s = await stream(1);
    return s?.['displayName'] === 'One' || undefined;
  });
});

t.test('a stream an adaptive group reads stays on the main thread', async (t) => {
  const srv = await startServer(t, {
    config: {
      server: { 'stream-workers': 1 },
      stream: [testStream(1, 'src')],
      'stream-adaptive': [{ id: 1, 'stream-name': 'abr', streams: [1], 'ott-hls': 1 }],
    },
  });
  await waitFor('stream 1 reported', async () => {
    const r = await fetch(`${srv.url}/data/stream/1`);
    return r.ok ? ((await r.json()) as Record<string, unknown>) : undefined;
  }).then((s) =>
    t.match(
      String(s['thread']),
      /^main \(read by stream-adaptive abr: not run in a stream worker yet\)$/,
      'on the main thread, and why',
    ),
  );
});

t.test(
  'a worker stream records through the main thread’s storage and plays back there',
  async (t) => {
    const dir = await tempDir(t, 'sluice-plane-dvr-');
    const srv = await startServer(t, {
      config: {
        server: { 'stream-workers': 1 },
        'dvr-storage-list': { storage: [{ id: 1, name: 'disk', 'dir-path': join(dir, 'store') }] },
        stream: [testStream(3, 'rec', { 'dvr-storage': 1 })],
      },
    });
    const list = await waitFor(
      'four archived seconds',
      async () => {
        const r = await fetch(`${srv.url}/data/dvr-storage-list`);
        const l = (await r.json()) as { streams: { name: string; 'archived-sec': number }[] }[];
        return (l[0]?.streams.find((s) => s.name === 'rec')?.['archived-sec'] ?? 0) >= 4
          ? l
          : undefined;
      },
      START_TIMEOUT_MS,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${srv.output()}`);
    });
    t.ok(list[0], 'chunks indexed by the main thread');
    const s = (await (await fetch(`${srv.url}/data/stream/3`)).json()) as Record<string, unknown>;
    t.equal(s['thread'], 'stream worker 0', 'the stream runs in the worker');
    const vod = await fetch(`${srv.url}/rec/index.m3u8?t=0`);
    const text = await vod.text();
    t.equal(vod.status, 200, text);
    t.match(text, /#EXT-X-ENDLIST/, 'a closed archive window');
    const probe = (await ffprobeJson(`${srv.url}/rec/index.m3u8?t=0`)) as {
      streams: { codec_type: string }[];
    };
    t.ok(
      probe.streams.some((x) => x.codec_type === 'video'),
      'ffprobe reads the archive',
    );
    // A live segment name is answered live (the worker), not from the archive.
    const live = await (await fetch(`${srv.url}/rec/index.m3u8`)).text();
    const seg = /^(seg-[^\s]+\.ts)$/m.exec(live)?.[1];
    t.ok(seg, 'a live segment listed');
    const body = await fetch(`${srv.url}/rec/${seg}`);
    t.equal(body.status, 200);
    t.equal((await body.arrayBuffer()).byteLength % 188, 0, 'whole TS packets');
  },
);

t.test('a worker stream’s live HLS-TS is answered by the native engine', async (t) => {
  const srv = await startServer(t, {
    config: { server: { 'stream-workers': 1 }, stream: [testStream(4, 'nat')] },
  });
  const playlist = await waitFor(
    'three live segments',
    async () => {
      const r = await fetch(`${srv.url}/nat/index.m3u8`);
      const text = r.ok ? await r.text() : '';
      return (text.match(/#EXTINF/g)?.length ?? 0) >= 3 ? text : undefined;
    },
    START_TIMEOUT_MS,
  );
  const seg = /^(seg-[^\s]+\.ts)$/m.exec(playlist)?.[1];
  const served = async () => (await deliveryStatus(srv.url))?.served ?? -1;
  const before = await served();
  t.ok(((await deliveryStatus(srv.url))?.entries ?? 0) > 0, 'the worker published into the engine');
  // Fresh connections (curl, one each): the listener hands each to the engine.
  for (let i = 0; i < 3; i++) {
    const { stdout } = await run('curl', [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code} %{size_download}',
      `${srv.url}/nat/${seg}`,
    ]);
    const [code, size] = stdout.split(' ').map(Number);
    t.equal(code, 200);
    t.equal((size ?? 1) % 188, 0, 'whole TS packets');
  }
  const after = await served();
  t.ok(before >= 0, `the engine's count is in /data/status (${before})`);
  t.ok(after >= before + 3, `the native engine answered them (${before} → ${after})`);
});
