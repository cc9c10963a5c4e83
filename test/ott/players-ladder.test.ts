// Issue 23: three transcoder renditions as an adaptive group (test/helpers/ladder.ts, HLS-TS and
// CMAF/DASH) play in hls.js (the TS master playlist) and dash.js (the MPD) in Debian's Chromium,
// and switch between the renditions on demand without a stall: after each forced switch the
// player reports the new level / representation as played, the picture has that rendition's
// size, currentTime keeps advancing, and no wait lasts over a second.
import t from 'tap';
import { playerPages } from '../helpers/browser.ts';
import { LADDER_RENDITIONS, startLadder } from '../helpers/ladder.ts';
import {
  advances,
  DASH_DRIVER,
  HLS_DRIVER,
  type Report,
  switchTo,
  TIMELINE_SCRIPT,
  waits,
} from '../helpers/player-page.ts';
import { waitFor } from '../helpers/stream-host.ts';

/** Renditions (indexes into the player's own list) to switch to, in turn. */
const SWITCHES = [0, 2, 1];
/** Playback asserted after start and after each switch. */
const PLAY_SECONDS = 3;
const START_TIMEOUT_MS = 20_000;
/** Longest `waiting` tolerated: a seamless switch never waits on data. */
const WAIT_BOUND_MS = 1_000;
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
        const [w, h] = levels[level]!;
        await switchTo(page, name, level, [w, h]);
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
