// A player page driven from a test (test/fixtures/ott/player.html in Chromium: hls.js, dash.js):
// the page's waits and plays recorded, drivers to list and force renditions, how far playback
// went and how long it waited.
import type { Page } from 'playwright-core';

/** A switch shows within a few 1 s segments (the player is several segments behind the edge). */
export const SWITCH_TIMEOUT_MS = 15_000;

/** Records each `waiting` and `playing` of the page's video with the wall clock. */
export const TIMELINE_SCRIPT = `window.timeline = [];
for (const type of ['waiting', 'playing'])
  document.addEventListener(type, () => window.timeline.push([Date.now(), type]), true);`;

export interface Report {
  stalls: number;
  waiting: number;
  errors: string[];
  playing: boolean;
}

/** hls.js: switch at the next fragment (nextLevel: no buffer flush), the level played
 *  (LEVEL_SWITCHED) recorded; levels as [width, height]. */
export const HLS_DRIVER = `({
  levels: () => window.player.levels.map((l) => [l.width, l.height]),
  listen() {
    window.switched = [];
    window.player.on(Hls.Events.LEVEL_SWITCHED, (_e, d) => window.switched.push(d.level));
  },
  switchTo(i) { window.player.nextLevel = i; },
})`;
/** dash.js: ABR off, a switch by index (no forced buffer replace), the representation rendered
 *  (QUALITY_CHANGE_RENDERED) recorded as its index in the video list. */
export const DASH_DRIVER = `({
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

export async function currentTime(page: Page): Promise<number> {
  // Strings, not functions: this file is type-checked without the DOM library.
  return page.evaluate<number>("document.getElementById('v').currentTime");
}

/** Wait until currentTime has advanced by `seconds`; returns how far it went. */
export async function advances(page: Page, seconds: number, timeoutMs: number): Promise<number> {
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

/** The waits (first `waiting` to the next `playing`, ms) that began at or after `since`, by
 *  default after playback first started; a wait still open counts up to now. */
export async function waits(page: Page, since?: number): Promise<number[]> {
  const events = await page.evaluate<[number, string][]>('window.timeline');
  const begin = since ?? events.find(([, type]) => type === 'playing')?.[0] ?? Date.now();
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

/** Force rendition `level` (the page's driver installed and listening): resolves once the player
 *  reports it played and the picture has its size `[w, h]`. */
export async function switchTo(page: Page, name: string, level: number, [w, h]: [number, number]) {
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
  // The decoder has the new rendition's picture size once its first frame is shown.
  await page.waitForFunction(
    `document.getElementById('v').videoWidth === ${w} && document.getElementById('v').videoHeight === ${h}`,
    undefined,
    { timeout: SWITCH_TIMEOUT_MS, polling: 100 },
  );
}
