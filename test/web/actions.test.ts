// The dashboard's pages that act or report, in Chromium against the real server (issue 20):
// the alerter's stream-down alert on the streams and alerts pages after alert-delay, cleared
// when the source is back; the add-stream form (a minimal merge patch in the config file, the
// new stream on the streams page, playing in the built-in hls.js player); pause / resume from
// the stream page; the storages page on a real archive storage; the keyboard through the list.
// The page is opened from 127.0.0.1, the anonymous admin (Digest is dashboard.test.ts's).
import type { ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { freePort, startServer, tempDir, waitFor } from '../helpers/server.ts';
import { makeFixture, playFixture } from '../helpers/stream-host.ts';
import { ensureUiBuilt, launch, screenshots } from '../helpers/web.ts';

// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the browser
declare const document: any, location: any;

const TIMEOUT_MS = 30_000;
const STREAM_TIMEOUT_US = 2_000_000;
const ALERT_DELAY_S = 2;

ensureUiBuilt();
const tmp = await tempDir(t, 'sluice-web-actions-');
const fixture = makeFixture(tmp, 4);
const newsPort = await freePort();
const HOUR = 3600;
const today = Math.floor(Date.now() / 1000 / 86_400) * 86_400;
const stamp = (sec: number) =>
  `${new Date(sec * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14)} +0000`;
/** An XMLTV guide: channels a and b, each with a programme for either half of today (UTC). */
const guideFile = join(tmp, 'guide.xml');
await writeFile(
  guideFile,
  `<?xml version="1.0" encoding="UTF-8"?>\n<tv>\n${['a', 'b']
    .map((c) => `<channel id="${c}.example"><display-name>${c}</display-name></channel>\n`)
    .join('')}${['a', 'b']
    .flatMap((c) =>
      [0, 1].map(
        (i) =>
          `<programme start="${stamp(today + i * 12 * HOUR)}" stop="${stamp(today + (i + 1) * 12 * HOUR)}" channel="${c}.example"><title lang="en">Show ${c} ${i}</title><desc lang="en">About ${c} ${i}.</desc></programme>\n`,
      ),
    )
    .join('')}</tv>\n`,
);
const addedPort = await freePort();
const srv = await startServer(t, {
  config: {
    alerter: { 'clear-sec': 1 },
    epg: { source: [{ id: 1, name: 'guide', source: guideFile, enable: true }] },
    'dvr-storage-list': {
      storage: [
        { id: 1, name: 'arch', 'dir-path': join(tmp, 'archive'), 'disk-emergency-bytes': 1 << 20 },
      ],
    },
    stream: [
      {
        id: 1,
        'stream-name': 'news',
        pause: false,
        'stream-timeout': STREAM_TIMEOUT_US,
        'alert-delay': ALERT_DELAY_S,
        'ott-hls': 1,
        'dvr-storage': 1,
        'dvr-hours': 1,
        'epg-source': 1,
        'epg-channel': 'a.example',
        input: [{ type: 'udp', address: '127.0.0.1', port: newsPort }],
      },
      {
        id: 2,
        'stream-name': 'side',
        'enable-alert': false,
        'epg-source': 1,
        'epg-channel': 'b.example',
        input: [{ type: 'udp', address: '127.0.0.1', port: await freePort() }],
      },
    ],
  },
});
const ui = `${srv.url}/ui/`;
const shot = screenshots(t, tmp);
// UTC: the EPG test's guide is laid out by UTC day (epg.test.ts shows another zone).
const ctx = await launch(join(tmp, 'profile'), undefined, 'UTC');
t.teardown(() => ctx.close());

const stateOf = async (name: string) =>
  ((await (await fetch(`${srv.url}/data/stream/${name}`)).json()) as { state: string }).state;
const configStreams = async () =>
  (JSON.parse(await readFile(srv.configPath!, 'utf8')) as { stream: Record<string, unknown>[] })
    .stream;

let news: ChildProcess = playFixture(
  t,
  fixture,
  'mpegts',
  `udp://127.0.0.1:${newsPort}?pkt_size=1316`,
);
await waitFor(
  'news running',
  async () => ((await stateOf('news')) === 'running' ? true : undefined),
  TIMEOUT_MS,
);

t.test('alerter → dashboard: the source stops, the alert shows; back, it clears', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/streams`);
  await page.locator('[data-stream="news"][data-state="running"]').waitFor({ timeout: TIMEOUT_MS });
  t.equal(await page.locator('[data-stream="news"] .c-alerts .badge').count(), 0, 'no alert yet');

  news.kill('SIGKILL');
  const stoppedAt = Date.now();
  await page
    .locator('[data-stream="news"] .c-alerts .badge')
    .waitFor({ timeout: TIMEOUT_MS })
    .catch(async (err) => {
      await shot(page, 'failed-alert');
      throw err;
    });
  const after = Date.now() - stoppedAt;
  // no-signal after stream-timeout, raised alert-delay later (sweeps are once a second).
  t.ok(
    after >= STREAM_TIMEOUT_US / 1000 + ALERT_DELAY_S * 1000,
    `shown ${after} ms after the source stopped (not before stream-timeout + alert-delay)`,
  );
  t.ok(after < 10_000, `and promptly (${after} ms)`);
  t.match(
    await page.locator('[data-stream="news"] .c-alerts .badge').getAttribute('title'),
    /news/,
    'the badge says what is wrong',
  );
  t.match(
    await page.getByRole('link', { name: /Alerts/ }).textContent(),
    /Alerts\s*1/,
    'the header counts the active alert',
  );
  await shot(page, 'alert-streams');

  await page.getByRole('link', { name: /Alerts/ }).click();
  const active = page.locator('[data-testid=active-alerts] li');
  await active.first().waitFor();
  t.match(await active.first().textContent(), /critical.*news/, 'the alerts page lists it');
  await page.locator('[aria-label="Alert history"] tbody tr').first().waitFor();
  t.match(
    await page.locator('[aria-label="Alert history"] tbody tr').first().textContent(),
    /raise.*critical/,
    'and its history has the raise',
  );
  await shot(page, 'alert-active');

  news = playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${newsPort}?pkt_size=1316`);
  await page.waitForFunction(
    () => document.querySelectorAll('[data-testid=active-alerts] li').length === 0,
    undefined,
    { timeout: TIMEOUT_MS },
  );
  t.pass('restored: the active list is empty');
  t.match(
    await page.locator('[aria-label="Alert history"] tbody tr').first().textContent(),
    /clear/,
    'the clear is the newest in the history',
  );
  t.notMatch(await page.getByRole('link', { name: /Alerts/ }).textContent(), /\d/, 'no count');
  await shot(page, 'alert-cleared');
});

t.test('add a stream from its input URL: minimal patch, listed, plays in hls.js', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/config`);
  const form = page.locator('form[aria-labelledby=add-h]');
  await form.getByLabel('Name').fill('added');
  await form.getByLabel('Input URL').fill(`udp://127.0.0.1:${addedPort}`);
  await form.getByRole('button', { name: 'Add' }).click();
  await page.getByTestId('add-status').waitFor();
  t.match(await page.getByTestId('add-status').textContent(), /Stream added added \(1 to add\)/);
  const rec = (await configStreams()).find((s) => s['stream-name'] === 'added');
  t.same(
    rec,
    {
      id: 3,
      'stream-name': 'added',
      pause: false,
      'ott-hls': 1,
      input: [{ type: 'udp', address: '127.0.0.1', port: addedPort }],
    },
    'the file has the record in minimal form',
  );

  playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${addedPort}?pkt_size=1316`);
  await page.goto(`${ui}#/streams`);
  await page
    .locator('[data-stream="added"][data-state="running"]')
    .waitFor({ timeout: TIMEOUT_MS });
  t.pass('the streams page lists it, running');
  await page.locator('[data-stream="added"]').click();
  await page.getByTestId('play').first().waitFor({ timeout: TIMEOUT_MS });
  await page.getByTestId('play').first().click();
  const video = page.getByTestId('player');
  await video.waitFor();
  const failed = async (err: unknown) => {
    await shot(page, 'failed-player');
    t.comment(await page.locator('.player').textContent());
    throw err;
  };
  const t0 = await page
    .waitForFunction(
      () => {
        const v = document.querySelector('[data-testid=player]');
        return v && v.currentTime > 0.5 ? v.currentTime : false;
      },
      undefined,
      { timeout: TIMEOUT_MS },
    )
    .catch(failed);
  const first = (await t0.jsonValue()) as number;
  await page.waitForFunction(
    (from: number) => (document.querySelector('[data-testid=player]')?.currentTime ?? 0) > from + 2,
    first,
    { timeout: TIMEOUT_MS },
  );
  t.pass(`the built-in player plays: currentTime moved on from ${first.toFixed(1)} s by 2 s`);
  await shot(page, 'added-playing');
});

t.test('pause and resume from the stream page land in the config file', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/stream/side`);
  const button = page.getByTestId('pause');
  await page.locator('[data-testid=state]', { hasText: 'paused' }).waitFor();
  t.equal(await button.textContent(), 'Resume', 'a paused stream offers Resume');
  await button.click();
  await page.waitForFunction(
    () => document.querySelector('[data-testid=state]')?.textContent !== 'paused',
    undefined,
    { timeout: TIMEOUT_MS },
  );
  t.equal(await button.textContent(), 'Pause', 'resumed: now it offers Pause');
  t.equal((await configStreams()).find((s) => s['stream-name'] === 'side')?.['pause'], false);
  await button.click();
  await page.locator('[data-testid=state]', { hasText: 'paused' }).waitFor({ timeout: TIMEOUT_MS });
  t.equal(
    (await configStreams()).find((s) => s['stream-name'] === 'side')?.['pause'],
    undefined,
    'paused again: the default, so the member is gone from the minimal file',
  );
});

t.test('the storages page shows the real storage record', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/storages`);
  const row = page.locator('[data-storage="arch"]');
  await row.waitFor();
  t.equal(await row.getAttribute('data-state'), 'ready');
  t.match(await row.getByTestId('fill').textContent(), /\d+(\.\d+)?% of \d/, 'fill in percent');
  t.match(await row.getByTestId('free').textContent(), /\d.*[KMGT]iB/, 'free space');
  t.match(await row.getByTestId('full-in').textContent(), /not growing|\d/, 'forecast');
  t.match(await row.textContent(), /news/, 'the attached stream');
  await shot(page, 'storages');
});

t.test('keyboard: arrows, Home and End move through the rows; Enter opens one', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/streams`);
  await page.locator('[data-stream="added"]').waitFor();
  const focused = () =>
    page.evaluate(() => document.activeElement?.getAttribute('data-stream') ?? null);
  // The list is in stream-name order: added, news, side.
  const moveTo = async (key: string, name: string, what: string) => {
    await page.keyboard.press(key);
    await page.waitForFunction(
      (n: string) => document.activeElement?.getAttribute('data-stream') === n,
      name,
    );
    t.equal(await focused(), name, what);
  };
  await page.locator('[data-stream="added"]').focus();
  await moveTo('ArrowDown', 'news', 'ArrowDown: the next row');
  await moveTo('End', 'side', 'End: the last row');
  await moveTo('ArrowUp', 'news', 'ArrowUp: the row before');
  await moveTo('Home', 'added', 'Home: the first row');
  await moveTo('ArrowDown', 'news', 'ArrowDown again');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.hash === '#/stream/1');
  t.pass('Enter opens it');
});

t.test("the editor shows the config file's own text", async (t) => {
  const file = await readFile(srv.configPath!, 'utf8');
  const res = await fetch(`${srv.url}/config/text`);
  t.equal(await res.text(), file, 'GET /config/text is the file as on disk');
  const cfg = await fetch(`${srv.url}/config`);
  t.equal(res.headers.get('etag'), cfg.headers.get('etag'), 'with the ETag of GET /config');
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/config`);
  await page.getByTestId('plan').waitFor({ timeout: TIMEOUT_MS });
  const lines = await page.locator('.cm-content .cm-line').allTextContents();
  const want = file.split('\n').slice(0, 12);
  t.same(lines.slice(0, 12), want, 'the editor starts with the same lines, layout kept');
});

t.test('the EPG page: channels × the hours of a day (24 h shown)', async (t) => {
  await waitFor(
    'the guide imported',
    async () => {
      const r = await fetch(`${srv.url}/data/epg/channel?src=1&ch=a.example&t=${today + 60}`);
      return ((await r.json()) as { event: unknown[] }).event.length === 2 ? true : undefined;
    },
    TIMEOUT_MS,
  );
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/epg`);
  await page.getByLabel('Hours shown').selectOption('24');
  const news = page.locator('[data-channel="news"] [data-testid=epg-event]');
  await page.waitForFunction(
    () => document.querySelectorAll('[data-channel] [data-testid=epg-event]').length === 4,
  );
  t.same(await news.allTextContents(), ['Show a 0', 'Show a 1'], "news: channel a's day");
  t.same(
    await page.locator('[data-channel="side"] [data-testid=epg-event]').allTextContents(),
    ['Show b 0', 'Show b 1'],
    "side: channel b's",
  );
  const track = await page.locator('[data-channel="news"] .epg-track').boundingBox();
  const box = await news.first().boundingBox();
  t.ok(
    track && box && Math.abs(box.width / track.width - 0.5) < 0.02 && box.x - track.x < 2,
    'a programme from 00:00 to 12:00 fills the first half of the row',
  );
  await shot(page, 'epg');
  await news.nth(1).focus();
  await page.keyboard.press('Enter');
  t.match(await page.getByTestId('epg-detail').textContent(), /12:00–00:00 Show a 1About a 1\./);
  t.match(await page.getByTestId('epg-zone').textContent(), /^Times in .*\(UTC\+00:00\)$/);
  await page.getByRole('button', { name: 'Later' }).click();
  await page.waitForFunction(
    () =>
      document.querySelectorAll('[data-testid=epg-event]').length === 0 &&
      /No programmes/.test(document.querySelector('[data-channel="news"]')?.textContent ?? ''),
  );
  t.pass('the next day has no programmes');
  await page.getByRole('button', { name: 'Now' }).click();
  await news.first().waitFor();
  t.pass('and back to today');
});

t.test(
  "change a stream's input: the patch and its plan first, then apply; 412 when stale",
  async (t) => {
    const page = await ctx.newPage();
    t.teardown(() => page.close());
    const sideInput = async () =>
      (await configStreams()).find((s) => s['stream-name'] === 'side')?.['input'];
    const before = await sideInput();
    const newPort = await freePort();
    await page.goto(`${ui}#/stream/side`);
    await page.getByTestId('change-input').click();
    const form = page.locator('form[aria-labelledby=chin-h]');
    await form.getByLabel('New URL').fill(`udp://127.0.0.1:${newPort}`);
    await form.getByRole('button', { name: 'Preview' }).click();
    await page.getByTestId('change-plan').waitFor();
    t.same(
      JSON.parse((await page.getByTestId('change-patch').textContent()) ?? ''),
      { input: [{ type: 'udp', address: '127.0.0.1', port: newPort }] },
      'the merge patch replaces the input list',
    );
    t.match(
      await page.getByTestId('change-plan').textContent(),
      /^~ .*side[\s\S]*input/,
      'the plan',
    );
    t.same(await sideInput(), before, 'nothing written by the preview');
    await shot(page, 'change-input-plan');
    await page.getByTestId('change-apply').click();
    await page.getByTestId('change-status').waitFor();
    t.match(await page.getByTestId('change-status').textContent(), /Applied: 1 to change/);
    t.same(
      await sideInput(),
      [{ type: 'udp', address: '127.0.0.1', port: newPort }],
      'the file has the new input',
    );

    // Stale: the config changes between the preview and the apply.
    await page.getByTestId('change-input').click();
    await form.getByLabel('New URL').fill(`udp://127.0.0.1:${newPort + 1}`);
    await form.getByRole('button', { name: 'Preview' }).click();
    await page.getByTestId('change-plan').waitFor();
    const other = await fetch(`${srv.url}/config/stream/2`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ note: 'meanwhile' }),
    });
    t.equal(other.status, 200, 'another edit lands meanwhile');
    await page.getByTestId('change-apply').click();
    await page.waitForFunction(() =>
      /changed meanwhile/.test(
        document.querySelector('[data-testid=change-status]')?.textContent ?? '',
      ),
    );
    t.pass('the apply says the config changed meanwhile');
    t.same(
      await sideInput(),
      [{ type: 'udp', address: '127.0.0.1', port: newPort }],
      'not written',
    );
  },
);
