// Issue 23: three transcoder renditions as an adaptive group (test/helpers/ladder.ts, HLS-TS and
// CMAF/DASH) play in hls.js (the TS master playlist) and dash.js (the MPD) in Debian's Chromium,
// and switch between the renditions on demand without a stall: after each forced switch the
// player reports the new level / representation as played, the picture has that rendition's
// size, currentTime keeps advancing, and no wait lasts over a second.
import type { Page } from 'playwright-core';
import t from 'tap';
import { playerPages } from '../helpers/browser.ts';
import { LADDER_RENDITIONS, startLadder } from '../helpers/ladder.ts';
import { waitFor } from '../helpers/stream-host.ts';

/** Renditions (indexes into the player's own list) to switch to, in turn. */
const SWITCHES = [0, 2, 1];
/** Playback asserted after start and after each switch. */
const PLAY_SECONDS = 3;
const START_TIMEOUT_MS = 20_000;
/** A switch shows within a few 1 s segments (the player is several segments behind the edge). */
const SWITCH_TIMEOUT_MS = 15_000;
/** Longest `waiting` tolerated: a seamless switch never waits on data. */
const WAIT_BOUND_MS = 1_000;
/** Records each `waiting` and `playing` of the page's video with the wall clock. */
const TIMELINE_SCRIPT = `window.timeline = [];
for (const type of ['waiting', 'playing'])
  document.addEventListener(type, () => window.timeline.push([Date.now(), type]), true);`;

interface Report {
  stalls: number;
  waiting: number;
  errors: string[];
  playing: boolean;
}

/** hls.js: switch at the next fragment (nextLevel: no buffer flush), the level played
 *  (LEVEL_SWITCHED) recorded; levels as [width, height]. */
const HLS_DRIVER = `({
  levels: () => window.player.levels.map((l) => [l.width, l.height]),
  listen() {
    window.switched = [];
    window.player.on(Hls.Events.LEVEL_SWITCHED, (_e, d) => window.switched.push(d.level));
  },
  switchTo(i) { window.player.nextLevel = i; },
})`;
/** dash.js: ABR off, a switch by index (no forced buffer replace), the representation rendered
 *  (QUALITY_CHANGE_RENDERED) recorded as its index in the video list. */
const DASH_DRIVER = `({
  reps: () => window.player.getRepresentationsByType('video'),
  levels() { return this.reps().map((r) => [r.width, r.height]); },
  listen() {
    window.switched = [];
    window.player.updateSettings({ streaming: { abr: { autoSwitchBitrate: { video: false } } } });
    window.player.on(dashjs.MediaPlayer.events.QUALITY_CHANGE_RENDERED, (e) => {
      if (e.mediaType !== 'video') return;
      window.switched.push(this.reps().findIndex((r) => r.id === e.newRepresentation.id));
    });
  },
  switchTo(i) { window.player.setRepresentationForTypeByIndex('video', i, false); },
})`;

async function currentTime(page: Page): Promise<number> {
  // Strings, not functions: this file is type-checked without the DOM library.
  return page.evaluate<number>("document.getElementById('v').currentTime");
}

/** Wait until currentTime has advanced by `seconds`; returns how far it went. */
async function advances(page: Page, seconds: number, timeoutMs: number): Promise<number> {
  const from = await currentTime(page);
  await page
    .waitForFunction(`document.getElementById('v').currentTime >= ${from + seconds}`, undefined, {
      timeout: timeoutMs,
      polling: 200,
    })
    .catch(async () => {
      const r = await page.evaluate<Report>('window.report');
      throw new Error(`currentTime stuck near ${await currentTime(page)} s: ${JSON.stringify(r)}`);
    });
  return (await currentTime(page)) - from;
}

/** The waits (first `waiting` to the next `playing`, ms) after playback first started; one
 *  still open counts up to now. */
async function waits(page: Page): Promise<number[]> {
  const events = await page.evaluate<[number, string][]>('window.timeline');
  const begin = events.find(([, type]) => type === 'playing')?.[0] ?? Date.now();
  const out: number[] = [];
  let from: number | undefined;
  for (const [at, type] of events) {
    if (at < begin) continue;
    if (type === 'waiting') from ??= at;
    else if (from !== undefined) {
      out.push(at - from);
      from = undefined;
    }
  }
  if (from !== undefined) out.push(Date.now() - from);
  return out;
}

const { base } = await startLadder(t, 3);

t.test('hls.js and dash.js switch between the ladder renditions without a stall', async (t) => {
  // A few segments in every rendition before the players start (a live edge needs them).
  await waitFor(
    async () => {
      for (const [, name] of LADDER_RENDITIONS) {
        const r = await fetch(`${base}/abr/${name}/ts.m3u8`);
        if (!r.ok || ((await r.text()).match(/#EXTINF/g)?.length ?? 0) < 4) return false;
      }
      const mpd = await fetch(`${base}/abr/index.mpd`);
      return mpd.ok && ((await mpd.text()).match(/<Representation /g)?.length ?? 0) >= 3;
    },
    40_000,
    'segments in every rendition and three video Representations in the MPD',
  );

  // Page and player libraries from a server of their own: the players fetch the group
  // cross-origin (the OTT responses allow any origin).
  const { context, pageBase } = await playerPages(t);
  await context.addInitScript(TIMELINE_SCRIPT);

  const cases: [string, string, string][] = [
    ['hls.js HLS-TS master', `player=hls&ll=0&src=${base}/abr/index.m3u8`, HLS_DRIVER],
    ['dash.js MPD', `player=dash&src=${base}/abr/index.mpd`, DASH_DRIVER],
  ];
  await Promise.all(
    cases.map(async ([name, query, driver]) => {
      const page = await context.newPage();
      await page.goto(`${pageBase}/player.html?${encodeURI(query)}`);
      const started = await advances(page, PLAY_SECONDS, START_TIMEOUT_MS + PLAY_SECONDS * 1000);
      t.ok(started >= PLAY_SECONDS, `${name}: plays (${started.toFixed(1)} s)`);
      await page.evaluate(`window.driver = ${driver}; window.driver.listen()`);
      const levels = await page.evaluate<[number, number][]>('window.driver.levels()');
      t.equal(levels.length, 3, `${name}: three renditions offered (${JSON.stringify(levels)})`);

      for (const level of SWITCHES) {
        await page.evaluate(`window.driver.switchTo(${level})`);
        await page
          .waitForFunction(`window.switched.includes(${level})`, undefined, {
            timeout: SWITCH_TIMEOUT_MS,
            polling: 100,
          })
          .catch(async () => {
            throw new Error(
              `${name}: no switch to ${level} played (switched ${JSON.stringify(await page.evaluate('window.switched'))})`,
            );
          });
        const [w, h] = levels[level]!;
        // The decoder has the new rendition's picture size once its first frame is shown.
        await page.waitForFunction(
          `document.getElementById('v').videoWidth === ${w} && document.getElementById('v').videoHeight === ${h}`,
          undefined,
          { timeout: SWITCH_TIMEOUT_MS, polling: 100 },
        );
        const moved = await advances(page, PLAY_SECONDS, PLAY_SECONDS * 1000 + 5_000);
        t.ok(moved >= PLAY_SECONDS, `${name}: ${w}x${h} played, advanced ${moved.toFixed(1)} s`);
        await page.evaluate('window.switched = []');
      }

      const r = await page.evaluate<Report>('window.report');
      const all = await waits(page);
      t.ok(
        all.every((ms) => ms <= WAIT_BOUND_MS),
        `${name}: no wait over ${WAIT_BOUND_MS} ms (waits ${JSON.stringify(all)} ms)`,
      );
      t.equal(r.stalls, 0, `${name}: no stall (errors: ${r.errors.join(', ') || 'none'})`);
      t.same(
        r.errors.filter((e) => e.includes('fatal')),
        [],
        `${name}: no fatal error`,
      );
      await page.close();
    }),
  );
});
