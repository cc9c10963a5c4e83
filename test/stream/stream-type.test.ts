// `stream-type` through a real server: 1 (audio only) and 2 (video only) streams from the test
// generator (H.264 + audio), read by ffprobe over HTTP-TS and HLS.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { liveTsConfig } from '../helpers/ott.ts';
import { startServer, waitFor } from '../helpers/server.ts';

const run = promisify(execFile);

async function kinds(url: string): Promise<string[]> {
  const { stdout } = await run('ffprobe', [
    ...['-v', 'error', '-show_entries', 'stream=codec_type', '-of', 'csv=p=0', url],
  ]);
  // (Each stream is listed under its programme and again on its own.)
  return [...new Set(stdout.split('\n').filter(Boolean))].sort();
}

t.test('audio only and video only', async (t) => {
  const base = liveTsConfig();
  const src = (base.stream as Record<string, unknown>[])[0]!;
  const stream = (id: number, name: string, type: number) => ({
    ...src,
    id,
    'stream-name': name,
    'stream-type': type,
    'ott-http': 1,
  });
  const srv = await startServer(t, {
    config: { stream: [stream(1, 'full', 0), stream(2, 'radio', 1), stream(3, 'mute', 2)] },
  });
  for (const name of ['full', 'radio', 'mute'])
    await waitFor(
      `${name} playlist`,
      async () => {
        const r = await fetch(`${srv.url}/${name}/index.m3u8`);
        return r.status === 200 && (await r.text()).includes('seg-') ? true : undefined;
      },
      40_000,
    );
  t.same(await kinds(`${srv.url}/full/mpegts`), ['audio', 'video'], 'stream-type 0: both');
  t.same(await kinds(`${srv.url}/radio/mpegts`), ['audio'], 'stream-type 1 over HTTP-TS');
  t.same(await kinds(`${srv.url}/mute/mpegts`), ['video'], 'stream-type 2 over HTTP-TS');
  t.same(await kinds(`${srv.url}/radio/index.m3u8`), ['audio'], 'stream-type 1 over HLS');
  t.same(await kinds(`${srv.url}/mute/index.m3u8`), ['video'], 'stream-type 2 over HLS');
});
