// Issue 36 item 8 in a player: hls.js in Chromium plays the ladder's HLS-TS master
// (test/helpers/ladder.ts) on `mid`, `hi`'s encoder is killed and restarts (a discontinuity in
// `hi`), and a switch to `hi` past that point plays on: the new level is played, with its
// picture size, currentTime advances, and no wait lasts over a second.
import t from 'tap';
import { playerPages } from '../helpers/browser.ts';
import { LADDER_RENDITIONS, startLadder } from '../helpers/ladder.ts';
import {
  advances,
  HLS_DRIVER,
  type Report,
  switchTo,
  TIMELINE_SCRIPT,
  waits,
} from '../helpers/player-page.ts';
import { waitFor } from '../helpers/stream-host.ts';

const PLAY_SECONDS = 3;
const START_TIMEOUT_MS = 20_000;
const RESTART_TIMEOUT_MS = 30_000;
const WAIT_BOUND_MS = 1_000;
/** Segments of `hi` after its discontinuity before the player switches to it. */
const AFTER_RESTART = 3;

const { base, streams } = await startLadder(t, 1);
const playlist = (name: string) => `${base}/abr/${name}/ts.m3u8`;

/** Segments listed after the last `#EXT-X-DISCONTINUITY` of a playlist (-1: none). */
async function afterDiscontinuity(name: string): Promise<number> {
  const r = await fetch(playlist(name));
  if (!r.ok) return -1;
  const text = await r.text();
  const at = text.lastIndexOf('#EXT-X-DISCONTINUITY\n');
  return at < 0 ? -1 : (text.slice(at).match(/#EXTINF/g)?.length ?? 0);
}

t.test('hls.js switches onto a rendition whose encoder restarted', async (t) => {
  await waitFor(
    async () => {
      for (const [, name] of LADDER_RENDITIONS) {
        const r = await fetch(playlist(name));
        if (!r.ok || ((await r.text()).match(/#EXTINF/g)?.length ?? 0) < 4) return false;
      }
      return true;
    },
    40_000,
    'segments in every rendition',
  );
  const { context, pageBase } = await playerPages(t);
  await context.addInitScript(TIMELINE_SCRIPT);
  const page = await context.newPage();
  await page.goto(
    `${pageBase}/player.html?${encodeURI(`player=hls&ll=0&src=${base}/abr/index.m3u8`)}`,
  );
  const started = await advances(page, PLAY_SECONDS, START_TIMEOUT_MS + PLAY_SECONDS * 1000);
  t.ok(started >= PLAY_SECONDS, `plays (${started.toFixed(1)} s)`);
  await page.evaluate(`window.driver = ${HLS_DRIVER}; window.driver.listen()`);
  const levels = await page.evaluate<[number, number][]>('window.driver.levels()');
  t.equal(levels.length, 3, `three renditions offered (${JSON.stringify(levels)})`);
  // By picture width: hi 320, mid 160 (the player orders its levels itself).
  const hiLevel = levels.findIndex(([w]) => w === 320);
  const midLevel = levels.findIndex(([w]) => w === 160);
  await switchTo(page, 'mid', midLevel, levels[midLevel]!);
  await page.evaluate('window.switched = []');

  const hi = streams[0]!;
  const transport = () =>
    (hi.status() as unknown as { inputs: { transport?: { pid?: number } }[] }).inputs[0]?.transport;
  const pid = transport()?.pid;
  t.type(pid, 'number', "hi's encoder runs");
  process.kill(pid!, 'SIGKILL');
  await waitFor(
    async () => (await afterDiscontinuity('hi')) >= AFTER_RESTART,
    RESTART_TIMEOUT_MS,
    `${AFTER_RESTART} segments of hi after its restart`,
  );
  const moved = await advances(page, PLAY_SECONDS, PLAY_SECONDS * 1000 + 5_000);
  t.ok(moved >= PLAY_SECONDS, `mid plays on through the restart (${moved.toFixed(1)} s)`);

  await switchTo(page, 'hi', hiLevel, levels[hiLevel]!);
  const after = await advances(page, PLAY_SECONDS, PLAY_SECONDS * 1000 + 5_000);
  t.ok(after >= PLAY_SECONDS, `hi played after the switch, advanced ${after.toFixed(1)} s`);
  const r = await page.evaluate<Report>('window.report');
  const all = await waits(page);
  t.ok(
    all.every((ms) => ms <= WAIT_BOUND_MS),
    `no wait over ${WAIT_BOUND_MS} ms (waits ${JSON.stringify(all)} ms)`,
  );
  t.equal(r.stalls, 0, `no stall (errors: ${r.errors.join(', ') || 'none'})`);
  await page.close();
});
