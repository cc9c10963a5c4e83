// What a playlist can make the hls input hold: a short URI per line against a playlist URL
// thousands of bytes long (every resolved segment URL carries it) is refused before it is
// parsed, and a live playlist that lists segments far faster than they play keeps the queue
// at its bound (the oldest dropped as a gap).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { HlsInput, MAX_LIVE_QUEUE } from '../../../src/inputs/hls/input.ts';
import { inputContext } from '../../helpers/input-ctx.ts';
import { waitFor } from '../../helpers/stream-host.ts';

async function origin(t: Test, h: http.RequestListener): Promise<string> {
  const s = http.createServer(h);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    s.closeAllConnections();
    return new Promise<void>((r) => s.close(() => r()));
  });
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

function run(t: Test, cfg: Record<string, unknown>): HlsInput {
  const inp = new HlsInput({ mode: 1, 'client-timeout': 1, ...cfg }, inputContext());
  inp.start();
  t.teardown(() => inp.close());
  return inp;
}

t.test('short URIs against a very long playlist URL: refused before parsing', async (t) => {
  const LONG = `/${'d'.repeat(4000)}/p.m3u8`;
  let body = '#EXTM3U\n#EXT-X-TARGETDURATION:1\n';
  for (let i = 0; i < 20_000; i++) body += '#EXTINF:1,\na\n';
  body += '#EXT-X-ENDLIST\n';
  const base = await origin(t, (req, res) => {
    if (req.url === '/p.m3u8') return void res.writeHead(302, { Location: LONG }).end();
    if (req.url === LONG) return void res.end(body);
    res.writeHead(404).end();
  });
  const inp = run(t, { uri: `${base}/p.m3u8` });
  await waitFor(() => inp.fault() !== '', 10_000, 'fault');
  t.match(
    inp.fault(),
    /^playlist http:\/\/127\.0\.0\.1:\d+\/d+…d+\/p\.m3u8 would take about 7\d(\.\d)? MiB of segment URLs once resolved against its own URL, over the 16 MiB cap$/,
  );
});

t.test(
  'a live playlist listing segments faster than they play: the queue stays bounded',
  async (t) => {
    let seq = 0;
    const base = await origin(t, (req, res) => {
      if (req.url === '/live.m3u8') {
        // 200 new segments every reload; each segment is left unanswered (its deadline ends it).
        seq += 200;
        let pl = `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:${seq}\n`;
        for (let i = 0; i < 200; i++) pl += `#EXTINF:1,\ns${seq + i}.ts\n`;
        return void res.end(pl);
      }
    });
    const inp = run(t, { uri: `${base}/live.m3u8` });
    let most = 0;
    await waitFor(
      () => {
        const queued = inp.status()['queued'];
        if (queued !== undefined) most = Math.max(most, Number(queued));
        return Number(inp.status()['reloads']) >= 3;
      },
      15_000,
      'three reloads',
    );
    t.ok(most > 0 && most <= MAX_LIVE_QUEUE, `at most ${most} segments queued`);
    t.ok(Number(inp.status()['gaps']) >= 1, 'the dropped ones counted as a gap');
  },
);
