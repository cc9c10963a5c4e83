// hls.js in Debian's Chromium plays sluice's HLS of RTMP sources (issue 17's acceptance): a
// stream pulling from nginx-rtmp fed by ffmpeg (H.264 + AAC), and a stream ffmpeg publishes to
// straight (`rtmp://@host:port/app/key`). Each must play: currentTime advances several
// seconds, no fatal hls.js error, audio and video both decoded.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { createOttService, OTT_FACTORY_SERVICE } from '../../src/ott/index.ts';
import { answerOtherMethod, delivers } from '../../src/ott/methods.ts';
import { CHROMIUM, CHROMIUM_ARGS, ROOT } from '../helpers/browser.ts';
import { haveNginxRtmp, startNginxRtmp } from '../helpers/nginx-rtmp.ts';
import { freePort, makeHost, openStream, peer, tempDir, waitFor } from '../helpers/stream-host.ts';

if (!haveNginxRtmp()) {
  t.fail('libnginx-mod-rtmp is not installed (scripts/setup installs it)');
  process.exit(1);
}

/** Seconds of playback asserted per player. */
const PLAY_SECONDS = 6;
const START_TIMEOUT_MS = 30_000;

const dir = tempDir(t, 'sluice-players-rtmp-');
const host = makeHost(dir);
host.services.set(OTT_FACTORY_SERVICE, createOttService);

// The player page and hls.js beside the streams' `/{name}/…` routes, as the real API has them.
const app = Fastify();
const files: Record<string, [string, string]> = {
  '/player.html': [join(ROOT, 'test/fixtures/ott/player.html'), 'text/html'],
  '/hls.min.js': [join(ROOT, 'node_modules/hls.js/dist/hls.min.js'), 'text/javascript'],
};
for (const [path, [file, type]] of Object.entries(files)) {
  app.get(path, (_req, reply) => reply.type(type).send(readFileSync(file)));
}
// The page loads dash.js too; hls.js is what plays here.
app.get('/dash.all.min.js', (_req, reply) => reply.type('text/javascript').send(''));
app.get('/:name/*', (req, reply) => {
  const { name, '*': rest } = req.params as { name: string; '*': string };
  const h = host.router.lookup(name);
  if (!h) return reply.code(404).send({ status: 404, message: 'no such stream' });
  return delivers(req) ? h(req, reply, rest) : answerOtherMethod(req, reply);
});
await app.listen({ port: 0, host: '127.0.0.1' });
t.teardown(() => app.close());
const addr = app.server.address();
if (!addr || typeof addr === 'string') throw new Error('no address');
const base = `http://127.0.0.1:${addr.port}`;

/** ffmpeg encoding a live test picture + tone as H.264 + AAC in FLV to `url`. */
function publish(t: Test, url: string) {
  return peer(t, 'ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-re'],
    ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25'],
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-b:v', '400k'],
    ...['-c:a', 'aac', '-b:a', '64k', '-f', 'flv', url],
  ]);
}

/** A stream with HLS on, pulling or awaiting a publish as `input` says. */
function hlsStream(t: Test, name: string, input: Record<string, unknown>) {
  return openStream(t, host, {
    'stream-name': name,
    'stream-timeout': 3_000_000,
    'ott-hls': 1,
    'ott-segment-duration': 1,
    input: [input],
  });
}

/** Resolves once `name`'s playlist lists three segments (a live edge needs them). */
async function segments(name: string): Promise<void> {
  await waitFor(
    async () => {
      const r = await fetch(`${base}/${name}/index.m3u8`);
      return r.ok && ((await r.text()).match(/#EXTINF/g) ?? []).length >= 3;
    },
    START_TIMEOUT_MS,
    `${name}: three HLS segments`,
  );
}

interface Played {
  moved: number;
  errors: string[];
  width: number;
  audioBytes: number;
  videoBytes: number;
}

/** Open hls.js on `name`'s index.m3u8; wait for currentTime to advance PLAY_SECONDS. */
async function play(context: BrowserContext, name: string): Promise<Played> {
  const page: Page = await context.newPage();
  await page.goto(`${base}/player.html?player=hls&ll=0&src=/${name}/index.m3u8`);
  const v = "document.getElementById('v')";
  await page.waitForFunction(`${v}.currentTime > 0`, undefined, {
    timeout: START_TIMEOUT_MS,
    polling: 200,
  });
  const from = await page.evaluate<number>(`${v}.currentTime`);
  await page
    .waitForFunction(`${v}.currentTime >= ${from + PLAY_SECONDS}`, undefined, {
      timeout: START_TIMEOUT_MS + PLAY_SECONDS * 1000,
      polling: 200,
    })
    .catch(() => {});
  // Strings, not functions: this file is type-checked without the DOM library.
  const [now, width, audioBytes, videoBytes] = await page.evaluate<number[]>(
    `[${v}.currentTime, ${v}.videoWidth, ${v}.webkitAudioDecodedByteCount, ${v}.webkitVideoDecodedByteCount]`,
  );
  const errors = await page.evaluate<string[]>('window.report.errors');
  await page.close();
  return {
    moved: now! - from,
    errors,
    width: width!,
    audioBytes: audioBytes!,
    videoBytes: videoBytes!,
  };
}

function expectPlayed(t: Test, what: string, p: Played): void {
  t.ok(p.moved >= PLAY_SECONDS, `${what}: currentTime advanced ${p.moved.toFixed(1)} s`);
  t.same(
    p.errors.filter((e) => e.includes('fatal')),
    [],
    `${what}: no fatal hls.js error (errors: ${p.errors.join(', ') || 'none'})`,
  );
  t.equal(p.width, 320, `${what}: video decoded (320 px wide)`);
  t.ok(p.videoBytes > 0, `${what}: video bytes decoded ${p.videoBytes}`);
  t.ok(p.audioBytes > 0, `${what}: audio bytes decoded ${p.audioBytes}`);
}

t.test(
  'hls.js plays RTMP-sourced streams: pulled from nginx-rtmp, published to sluice',
  async (t) => {
    const origin = await startNginxRtmp(t, { live: 'live on;' });
    publish(t, `${origin.base}/live/src`);
    const port = await freePort();
    await hlsStream(t, 'rtmp-pulled', { type: 'rtmp', url: `${origin.base}/live/src` });
    const pub = await hlsStream(t, 'rtmp-published', {
      type: 'rtmp',
      url: `rtmp://@127.0.0.1:${port}/live/k3y`,
    });
    const message = () =>
      String((pub.status()['inputs'] as Record<string, unknown>[])[0]!['message'] ?? '');
    await waitFor(() => /waiting for a publisher/.test(message()), 10_000, 'publish listener');
    publish(t, `rtmp://127.0.0.1:${port}/live/k3y`);
    await Promise.all([segments('rtmp-pulled'), segments('rtmp-published')]);

    const context = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    t.teardown(() => context.close());
    const [pulled, published] = await Promise.all([
      play(context, 'rtmp-pulled'),
      play(context, 'rtmp-published'),
    ]);
    expectPlayed(t, 'RTMP pull from nginx-rtmp', pulled);
    expectPlayed(t, 'RTMP publish to sluice', published);
  },
);
