// hls.js and dash.js in Debian's Chromium play a stream behind viewer authorisation (issue 19's
// acceptance): with a valid token they play, every follow-up request carrying the token the
// playlist or MPD handed on (loopback is not anonymous here, so a URI without it would fail);
// with a bad token nothing plays. The billing server gets start, interim and stop with byte
// counts that match the stream's bitrate over a 60 s session.
import type { Page } from 'playwright-core';
import t from 'tap';
import { startBilling } from '../helpers/billing.ts';
import { playerPages } from '../helpers/browser.ts';
import { startServer, waitFor } from '../helpers/server.ts';

const PLAY_SECONDS = 8;
const START_TIMEOUT_MS = 30_000;
/** The test picture's video bit rate (kbit/s); audio adds 128. */
const VIDEO_KBPS = 300;

const billing = await startBilling((r) =>
  r.query.get('event') !== 'auth'
    ? { status: 200 }
    : { status: r.query.get('token')?.startsWith('paid') ? 200 : 403, body: 'not paid' },
);
t.teardown(billing.close);
const srv = await startServer(t, {
  config: {
    cs: {
      'loopback-anonymous': false,
      'session-idle-sec': 5,
      'interim-sec': 5,
      server: [{ id: 1, name: 'billing', password: 'k', url: billing.url }],
    },
    stream: [
      {
        id: 1,
        'stream-name': 'paid',
        pause: false,
        'ott-hls': 3,
        'ott-segment-duration': 1,
        input: [
          {
            type: 'test',
            width: 320,
            height: 180,
            'frame-rate': 25,
            'gop-interval': 25,
            'video-bitrate': VIDEO_KBPS,
            'audio-enc': 1,
            'enable-overlay': false,
          },
        ],
      },
    ],
  },
});
const src = (p: string) => `${srv.url}/paid/${p}`;
await waitFor(
  'three segments',
  async () => {
    const r = await fetch(src('index.m3u8?token=paid'));
    return r.ok && ((await r.text()).match(/#EXTINF/g) ?? []).length >= 3 ? true : undefined;
  },
  START_TIMEOUT_MS,
);

const { context, pageBase } = await playerPages(t);

const V = "document.getElementById('v')";

async function open(query: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${pageBase}/player.html?${query}`);
  return page;
}

/** Seconds currentTime advanced once it started (0 when it never did). */
async function played(page: Page, seconds: number): Promise<number> {
  const started = await page
    .waitForFunction(`${V}.currentTime > 0`, undefined, { timeout: START_TIMEOUT_MS, polling: 200 })
    .then(() => true)
    .catch(() => false);
  if (!started) return 0;
  const from = await page.evaluate<number>(`${V}.currentTime`);
  await page
    .waitForFunction(`${V}.currentTime >= ${from + seconds}`, undefined, {
      timeout: START_TIMEOUT_MS + seconds * 1000,
      polling: 200,
    })
    .catch(() => {});
  return (await page.evaluate<number>(`${V}.currentTime`)) - from;
}

// The accounted session of the last test plays from here on, while the others run.
const ACCOUNTED_SECONDS = 60;
const accountedPage = await open(
  `player=hls&ll=0&src=${encodeURIComponent(src('index.m3u8?token=paid-acct'))}`,
);
const accounted = played(accountedPage, ACCOUNTED_SECONDS);

t.test('hls.js and dash.js play with a paid token', async (t) => {
  const cases: [string, string][] = [
    ['hls.js', `player=hls&ll=0&src=${encodeURIComponent(src('index.m3u8?token=paid'))}`],
    ['dash.js', `player=dash&src=${encodeURIComponent(src('index.mpd?token=paid'))}`],
  ];
  for (const [name, query] of cases) {
    const page = await open(query);
    const moved = await played(page, PLAY_SECONDS);
    t.ok(moved >= PLAY_SECONDS, `${name}: currentTime advanced ${moved.toFixed(1)} s`);
    await page.close();
  }
});

t.test('hls.js with an unpaid token plays nothing', async (t) => {
  const page = await open(
    `player=hls&ll=0&src=${encodeURIComponent(src('index.m3u8?token=unpaid'))}`,
  );
  await page.waitForFunction('window.report.errors.length > 0', undefined, {
    timeout: START_TIMEOUT_MS,
    polling: 200,
  });
  const errors = await page.evaluate<string[]>('window.report.errors');
  t.match(errors.join(','), /manifestLoadError \(fatal\)/, `hls.js: ${errors.join(', ')}`);
  t.equal(await page.evaluate<number>(`${V}.currentTime`), 0);
  await page.close();
});

t.test('accounting: start, interim and stop with the bytes of the session', async (t) => {
  const moved = await accounted;
  await accountedPage.close();
  t.ok(moved >= ACCOUNTED_SECONDS, `played ${moved.toFixed(1)} s`);
  // A session is per (viewer, stream, address): this page's token is its own.
  const session = billing
    .events('start')
    .find((r) => r.query.get('token') === 'paid-acct')!
    .query.get('session')!;
  const [stop] = await billing.waitFor(
    (r) => r.query.get('event') === 'stop' && r.query.get('session') === session,
  );
  const interims = billing.events('interim').filter((r) => r.query.get('session') === session);
  t.ok(interims.length >= ACCOUNTED_SECONDS / 5 - 2, `${interims.length} interims, one each 5 s`);
  const bytes = Number(stop!.query.get('bytes'));
  const duration = Number(stop!.query.get('duration'));
  t.ok(
    duration >= ACCOUNTED_SECONDS && duration <= ACCOUNTED_SECONDS + 30,
    `session lasted ${duration} s`,
  );
  // What was sent is the media of the played seconds plus the buffer ahead, at the stream's
  // rate (video + 128 kbit/s audio + TS overhead): between half and twice of that.
  const expected = ((VIDEO_KBPS + 128) * 1000 * moved) / 8;
  t.ok(
    bytes > expected / 2 && bytes < expected * 2.5,
    `${bytes} bytes for ${moved.toFixed(1)} s played (~${Math.round(expected)})`,
  );
  const counts = [...interims.map((r) => Number(r.query.get('bytes'))), bytes];
  t.ok(
    counts.every((n, i) => i === 0 || n >= counts[i - 1]!),
    `interims count up to the stop: ${counts.join(' ')}`,
  );
  t.equal(stop!.query.get('stream'), 'paid');
});
