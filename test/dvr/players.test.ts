// Browser playback of the archive: hls.js plays the VOD HLS (over TS and fMP4) and dash.js the
// static DASH with two Periods across a recording gap, in Debian's Chromium (playwright-core),
// judged by video.currentTime advancing with no fatal error.
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import t from 'tap';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { silentLogger } from '../../src/log.ts';
import { createOttService } from '../../src/ott/index.ts';
import { CHROMIUM, CHROMIUM_ARGS, ROOT } from '../helpers/browser.ts';
import { makeTestStream, startOttServer, TinyBus } from '../helpers/ott.ts';
import { feedPaced, hookHost, recordingHost, tempDir } from './helpers.ts';

/** Seconds of the first recorded run (before the gap) and of the second. */
const RUN_A = 8;
const RUN_B = 6;
/** HLS plays past the first run: across the discontinuity of the gap. */
const HLS_PLAY_SECONDS = RUN_A + 1;
const PLAY_TIMEOUT_MS = 25_000;

interface Report {
  errors: string[];
  playing: boolean;
}

/** Wait until currentTime reaches `at` seconds (bounded); returns it. */
async function reaches(page: Page, at: number): Promise<number> {
  const expr = "document.getElementById('v').currentTime";
  try {
    await page.waitForFunction(`${expr} >= ${at}`, undefined, {
      timeout: PLAY_TIMEOUT_MS,
      polling: 200,
    });
  } catch {
    const r = await page.evaluate(() => (globalThis as unknown as { report: Report }).report);
    throw new Error(
      `currentTime stuck at ${await page.evaluate<number>(expr)} s (wanted ${at}): ${JSON.stringify(r)}`,
    );
  }
  return page.evaluate<number>(expr);
}

t.test('hls.js and dash.js play the archive in Chromium', async (t) => {
  const dir = tempDir(t);
  const { clock, host } = await recordingHost(t, dir);
  const spec = { 'stream-name': 's', 'ott-hls': 3, 'ott-segment-duration': 2, 'dvr-storage': 1 };
  const bus = new TinyBus();
  const svc = new ArchivedOttService(
    createOttService({ name: 's', spec, bus, clock, log: silentLogger }),
    { ...hookHost(host), name: 's', spec: () => spec, state: () => 'running' },
  );
  t.teardown(() => svc.close());

  const a = await makeTestStream(join(dir, 'a.ts'), { seconds: RUN_A, gop: 25 });
  const b = await makeTestStream(join(dir, 'b.ts'), { seconds: RUN_B, gop: 25, offset: 1000 });
  await feedPaced(bus, clock, a, RUN_A);
  bus.discontinuity('input switch');
  clock.advance(30_000); // a gap in the recording: the DASH form gets two Periods
  await feedPaced(bus, clock, b, RUN_B);
  await svc.recorder!.settle();

  const { app, base } = await startOttServer(new Map([['s', svc]]), {
    '/player.html': { path: join(ROOT, 'test/fixtures/ott/player.html'), type: 'text/html' },
    '/hls.min.js': {
      path: join(ROOT, 'node_modules/hls.js/dist/hls.min.js'),
      type: 'text/javascript',
    },
    '/dash.all.min.js': {
      path: join(ROOT, 'node_modules/dashjs/dist/modern/umd/dash.all.min.js'),
      type: 'text/javascript',
    },
  });
  t.teardown(() => app.close());
  const mpd = await (await fetch(`${base}/s/index.mpd?t=0`)).text();
  t.match(mpd, /type="static"/);
  t.equal((mpd.match(/<Period /g) ?? []).length, 2, 'two Periods across the gap');
  const starts = [...mpd.matchAll(/<Period [^>]*start="PT([\d.]+)S"/g)].map((m) => Number(m[1]));
  const firstPeriod = starts[1] ?? RUN_A;

  const context: BrowserContext = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  t.teardown(() => context.close());
  const cases: [string, string, number][] = [
    ['hls.js VOD HLS over TS', 'player=hls&src=/s/index.m3u8?t=0', HLS_PLAY_SECONDS],
    ['hls.js VOD HLS fMP4', 'player=hls&src=/s/cmaf.m3u8?t=0', HLS_PLAY_SECONDS],
    // Into the second Period: the player crossed the gap.
    ['dash.js static DASH, 2 Periods', 'player=dash&src=/s/index.mpd?t=0', firstPeriod + 1],
  ];
  await Promise.all(
    cases.map(async ([name, q, at]) => {
      const page = await context.newPage();
      await page.goto(`${base}/player.html?${q.replace('?t=0', '%3Ft%3D0')}`);
      const now = await reaches(page, at);
      t.ok(now >= at, `${name}: currentTime reached ${now.toFixed(1)} s (≥ ${at})`);
      const r = await page.evaluate(() => (globalThis as unknown as { report: Report }).report);
      t.same(
        r.errors.filter((e) => e.includes('fatal')),
        [],
        `${name}: no fatal error (${r.errors.join(', ') || 'none'})`,
      );
    }),
  );
});
