// hls.js (HLS over TS, HLS fMP4/LL-HLS) and dash.js (DASH) in Debian's Chromium play a live
// stream packaged by sluice, and keep playing across an input splice (discontinuity).
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import pino from 'pino';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import { systemClock } from '../../src/util/clock.ts';
import { CHROMIUM, CHROMIUM_ARGS, ROOT } from '../helpers/browser.ts';
import { liveGenerator, startOttServer, TinyBus, tempDir } from '../helpers/ott.ts';
import { currentTime, type Report, TIMELINE_SCRIPT, waits } from '../helpers/player-page.ts';

/** Playback asserted before the failover (the issue asks for 30 s per player) and after it. */
const PLAY_SECONDS = 30;
const AFTER_SPLICE_SECONDS = 15;
const START_TIMEOUT_MS = 20_000;
/**
 * Longest a player may sit in `waiting` before it plays again by itself. At the failover the
 * backup is joined at its next keyframe, so no media arrives for up to one GOP plus one part
 * (1.25 s here); then the player reloads its playlist or MPD and appends the new run (dash.js
 * waits about the length of the gap before the new Period, then jumps it): 0.2-1.8 s measured.
 * The longest waits seen are hls.js in low-latency mode on a hole it left itself after falling
 * behind (a busy machine stalls the page; it then skips the rest of the segment it was in, see
 * docs/ott.md), 2-4.7 s before it jumps the hole. A player stuck at a Period boundary or on a
 * hole never ends its wait.
 */
const RESUME_BOUND_MS = 8_000;
async function report(page: Page): Promise<Report> {
  return page.evaluate(() => (globalThis as unknown as { report: Report }).report);
}

/** Wait until the video's currentTime has advanced by `seconds` (bounded). */
async function advances(page: Page, seconds: number, timeoutMs: number): Promise<number> {
  const from = await currentTime(page);
  try {
    await page.waitForFunction(
      `document.getElementById('v').currentTime >= ${from + seconds}`,
      undefined,
      {
        timeout: timeoutMs,
        polling: 200,
      },
    );
  } catch {
    const r = await report(page);
    // The buffered ranges tell a player waiting for data that never came from one stuck in
    // front of a hole.
    const buffered = await page.evaluate<string>(
      "Array.from({ length: document.getElementById('v').buffered.length }, (_, i) => { const b = document.getElementById('v').buffered; return b.start(i).toFixed(2) + '-' + b.end(i).toFixed(2); }).join(' ')",
    );
    throw new Error(
      `currentTime stuck near ${(await currentTime(page)).toFixed(1)} s (buffered ${buffered}): ${JSON.stringify(r)}`,
    );
  }
  return (await currentTime(page)) - from;
}

t.test('hls.js and dash.js play live output across a splice', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const bus = new TinyBus();
  const svc = createOttService({
    name: 'live',
    spec: { 'ott-hls': 3, 'ott-segment-duration': 1, 'ott-part-duration': 0.25, 'ott-window': 6 },
    bus,
    clock: systemClock,
    log: pino({ level: 'silent' }),
  });
  t.teardown(() => svc.close());
  // Two inputs running side by side, like a main and a backup: the switch between them is a
  // splice whose timestamps jump (the backup's clock starts 1000 s later).
  let onBackup = false;
  const stream = { seconds: 90, gop: 25, bframes: true };
  const main: ChildProcess = liveGenerator(bus, stream, () => !onBackup);
  const backup: ChildProcess = liveGenerator(bus, { ...stream, offset: 1000 }, () => onBackup);
  t.teardown(() => {
    main.kill('SIGKILL');
    backup.kill('SIGKILL');
  });

  const { app, base } = await startOttServer(new Map([['live', svc]]), {
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

  // Wait for a few segments before opening players (a live edge needs them).
  const ready = Date.now();
  while ((svc.status()['ts-segments'] as number) < 3) {
    if (Date.now() - ready > START_TIMEOUT_MS) throw new Error('packager produced no segments');
    await new Promise((r) => setTimeout(r, 200));
  }

  const context: BrowserContext = await chromium.launchPersistentContext(join(tmp.dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  t.teardown(() => context.close());
  await context.addInitScript(TIMELINE_SCRIPT);
  const cases = {
    'hls.js HLS over TS': `player=hls&src=/live/index.m3u8`,
    'hls.js HLS fMP4 (LL-HLS)': `player=hls&src=/live/cmaf.m3u8`,
    'hls.js HLS fMP4 (lowLatencyMode off)': `player=hls&ll=0&src=/live/cmaf.m3u8`,
    'dash.js DASH': `player=dash&src=/live/index.mpd`,
  };
  const pages = new Map<string, Page>();
  for (const [name, q] of Object.entries(cases)) {
    const page = await context.newPage();
    await page.goto(`${base}/player.html?${q}`);
    pages.set(name, page);
  }
  await Promise.all(
    [...pages].map(async ([name, page]) => {
      const moved = await advances(page, PLAY_SECONDS, START_TIMEOUT_MS + PLAY_SECONDS * 1000);
      t.ok(moved >= PLAY_SECONDS, `${name}: currentTime advanced ${moved.toFixed(1)} s`);
    }),
  );
  const before = new Map<string, Report>();
  for (const [name, page] of pages) before.set(name, await report(page));

  // Failover to the backup, announced on the bus like the stream engine does.
  const failoverAt = Date.now();
  bus.discontinuity('failover');
  onBackup = true;
  await Promise.all(
    [...pages].map(async ([name, page]) => {
      const moved = await advances(
        page,
        AFTER_SPLICE_SECONDS,
        START_TIMEOUT_MS + AFTER_SPLICE_SECONDS * 1000,
      );
      t.ok(
        moved >= AFTER_SPLICE_SECONDS,
        `${name}: advanced ${moved.toFixed(1)} s after the splice`,
      );
    }),
  );
  // Where the DASH Periods start after the splice (logged to diagnose a dash.js stall there).
  const mpd = await (await fetch(`${base}/live/index.mpd`)).text();
  t.comment(
    `DASH Periods: ${[...mpd.matchAll(/<Period id="([^"]+)" start="([^"]+)"/g)].map((m) => `${m[1]}@${m[2]}`).join(' ')}`,
  );
  for (const [name, page] of pages) {
    const r = await report(page);
    const errors = `errors: ${r.errors.join(', ') || 'none'}`;
    const lowLatency = name.includes('LL-HLS');
    // Whatever happens, a player never sits in `waiting` for long: this is what fails when
    // dash.js stops at a Period boundary or a player waits on a hole it cannot jump.
    const all = await waits(page);
    t.ok(
      all.every((ms) => ms <= RESUME_BOUND_MS),
      `${name}: every wait ended within ${RESUME_BOUND_MS} ms (waits ${JSON.stringify(all)} ms, ${
        (await waits(page, failoverAt)).length
      } after the failover)`,
    );
    if (lowLatency) {
      // LL-HLS cannot always ride through this failover: the backup is joined at its next
      // keyframe, so no media arrives for up to one GOP (1 s here) plus one part, while hls.js
      // plays PART-HOLD-BACK (0.75 s) behind the edge. When its buffer runs dry it stalls
      // once, widens its target latency by 1 s and plays on (asserted above: the wait ends by
      // itself, and currentTime advanced after it). So at most one stall across the failover;
      // docs/ott.md ("LL-HLS across a failover") has the arithmetic and the trade-off.
      t.ok(
        r.stalls - before.get(name)!.stalls <= 1,
        `${name}: at most one stall across the failover (${r.stalls - before.get(name)!.stalls}; ${errors})`,
      );
    } else {
      // The TS and DASH players sit several segments back and absorb the gap, and so does
      // hls.js on the same fMP4 playlists with lowLatencyMode off. Holes from the packager
      // itself (audio ending before video, missing segment numbers, an unfinished B-frame
      // group, the B-frame delay at a new run) are fixed and tested in segmenter.test.ts and
      // splice.test.ts.
      t.equal(r.stalls, 0, `${name}: no stall event (${errors})`);
    }
    if (name.startsWith('hls.js') && !lowLatency) {
      // A buffer hole at the splice (hls.js seeks over it and waits) is a stall in all but name.
      t.same(
        r.errors.filter((e) => e.startsWith('bufferSeekOverHole')),
        [],
        `${name}: no buffer hole at the splice`,
      );
    }
    t.same(
      r.errors.filter((e) => e.includes('fatal')),
      [],
      `${name}: no fatal error`,
    );
    t.comment(
      `${name}: stalls ${before.get(name)?.stalls} before the splice, ${r.stalls} in all; waiting events before the splice ${before.get(name)?.waiting}, ${r.waiting} in all`,
    );
  }
});
