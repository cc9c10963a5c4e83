// The EPG pages on a big guide, in Chromium with the zone Asia/Kolkata (UTC+05:30, so a local
// time is never a UTC one): 60 channels of ten-minute programmes over three days and one channel
// with a week of five-minute programmes (2,016 in the seven local days shown). What is drawn is
// bounded by the rows in view, not by the guide: the grid draws ~20 of its 61 channel rows and
// fetches only their days, the week list draws ~40 of its 2,016 rows. Counts in the DOM, not
// times, so the test holds on a loaded machine. Times are shown in the viewer's zone.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { freePort, startServer, tempDir, waitFor } from '../helpers/server.ts';
import { ensureUiBuilt, launch } from '../helpers/web.ts';

// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the browser
declare const document: any;

const TIMEOUT_MS = 30_000;
const ZONE = 'Asia/Kolkata';
const ZONE_OFFSET = 5.5 * 3600;
const DAY = 86_400;
const CHANNELS = 60;
/** Ten-minute programmes over three UTC days: 432 a channel. */
const GRID_STEP = 600;
/** Five-minute programmes over nine UTC days for the week channel. */
const WEEK_STEP = 300;
/** Rows the viewport (1280×720) shows at most, plus the virtual list's overscan both ways. */
const MAX_ROWS = 720 / 36 + 2 * 8;

ensureUiBuilt();
const tmp = await tempDir(t, 'sluice-web-epg-');
const now = Math.floor(Date.now() / 1000);
const today = now - (now % DAY);
/** Local midnight in Kolkata at or before now: the week list's first programme. */
const localToday = Math.floor((now + ZONE_OFFSET) / DAY) * DAY - ZONE_OFFSET;
const stamp = (sec: number) =>
  `${new Date(sec * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14)} +0000`;
/** HH:MM in Kolkata. */
const local = (sec: number) => new Date((sec + ZONE_OFFSET) * 1000).toISOString().slice(11, 16);

function programmes(channel: string, from: number, to: number, step: number): string[] {
  const out: string[] = [];
  for (let s = from; s < to; s += step) {
    out.push(
      `<programme start="${stamp(s)}" stop="${stamp(s + step)}" channel="${channel}"><title>${channel.split('.')[0]} ${s}</title></programme>`,
    );
  }
  return out;
}

const names = Array.from({ length: CHANNELS }, (_, i) => `c${String(i).padStart(3, '0')}`);
const guide = join(tmp, 'guide.xml');
await writeFile(
  guide,
  [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<tv>',
    ...['week', ...names].map(
      (c) => `<channel id="${c}.example"><display-name>${c}</display-name></channel>`,
    ),
    ...programmes('week.example', today - DAY, today + 8 * DAY, WEEK_STEP),
    ...names.flatMap((c) => programmes(`${c}.example`, today - DAY, today + 2 * DAY, GRID_STEP)),
    '</tv>',
    '',
  ].join('\n'),
);
const port = await freePort();
const srv = await startServer(t, {
  config: {
    epg: { source: [{ id: 1, name: 'guide', source: guide, enable: true }] },
    stream: ['week', ...names].map((c, i) => ({
      id: i + 1,
      'stream-name': c,
      pause: true,
      'epg-source': 1,
      'epg-channel': `${c}.example`,
      input: [{ type: 'udp', address: '127.0.0.1', port }],
    })),
  },
});
await waitFor(
  'the guide imported',
  async () => {
    const r = await fetch(`${srv.url}/data/epg/channel?src=1&ch=c059.example&t=${today + 60}`);
    const b = (await r.json()) as { event?: unknown[] } | null;
    return b?.event?.length === DAY / GRID_STEP ? true : undefined;
  },
  60_000,
);
const ctx = await launch(join(tmp, 'profile'), undefined, ZONE);
t.teardown(() => ctx.close());

t.test('the grid: only the channels in view are drawn and fetched', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  const days = new Set<string>();
  page.on('request', (r) => {
    if (r.url().includes('/data/epg/channel')) days.add(new URL(r.url()).search);
  });
  await page.goto(`${srv.url}/ui/#/epg`);
  await page.waitForFunction(
    () =>
      document.querySelector('.vrow [data-channel="c000"] [data-testid=epg-event]') !== null &&
      document.querySelectorAll('.vrow .epg-track small').length === 0,
    undefined,
    { timeout: TIMEOUT_MS },
  );
  const drawn = await page.evaluate(() => ({
    rows: document.querySelectorAll('.vrow').length,
    events: document.querySelectorAll('[data-testid=epg-event]').length,
    elements: document.getElementsByTagName('*').length,
  }));
  // What the page drew before: every channel's whole UTC day, every programme a button.
  const before = 1 * (DAY / WEEK_STEP) + CHANNELS * (DAY / GRID_STEP);
  t.comment(
    `61 channels: ${drawn.rows} rows, ${drawn.events} programmes, ${drawn.elements} elements in the DOM (before: ${before} programmes); ${days.size} channel days fetched`,
  );
  t.equal(await page.locator('.count').getAttribute('data-count'), '61');
  t.ok(drawn.rows <= MAX_ROWS, `${drawn.rows} channel rows drawn of 61`);
  // A six-hour window holds 36 ten-minute programmes (37 when it starts mid-programme).
  t.ok(drawn.events <= drawn.rows * 37, `${drawn.events} programmes drawn`);
  t.ok(drawn.events < before / 10, `at most a tenth of the ${before} drawn before`);
  t.ok(drawn.elements < 4000, `${drawn.elements} elements`);
  t.ok(days.size <= drawn.rows * 2, `${days.size} channel days fetched, not 61 × 2`);

  t.match(
    await page.getByTestId('epg-zone').textContent(),
    /^Times in Asia\/(Kolkata|Calcutta) \(UTC\+05:30\)$/,
  );
  const first = page.locator('[data-channel="c000"] [data-testid=epg-event]').first();
  const title = (await first.textContent()) ?? '';
  const start = Number(title.split(' ')[1]);
  t.equal(
    await first.getAttribute('aria-label'),
    `${title}, ${local(start)} to ${local(start + GRID_STEP)}`,
    'a programme at its local time',
  );
  await first.click();
  t.match(
    await page.getByTestId('epg-detail').textContent(),
    `${local(start)}–${local(start + GRID_STEP)} ${title}`,
  );

  // Scrolled to the end: the last channel drawn and fetched, the first ones gone.
  await page.evaluate(() => {
    const list = document.querySelector('.vlist');
    list.scrollTop = list.scrollHeight;
  });
  await page.waitForFunction(
    () => document.querySelector('.vrow [data-channel="c059"] [data-testid=epg-event]') !== null,
    undefined,
    { timeout: TIMEOUT_MS },
  );
  t.equal(await page.locator('.vrow [data-channel="c000"]').count(), 0, 'c000 no longer drawn');
});

t.test('one channel: a week of programmes in a virtual list', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  // The week channel is stream 1 (the grid's last row: the list is by name).
  await page.goto(`${srv.url}/ui/#/epg/1`);
  const count = page.getByTestId('epg-count');
  await page.waitForFunction(
    () => document.querySelector('[data-testid=epg-count]')?.dataset.count === '2016',
    undefined,
    { timeout: TIMEOUT_MS },
  );
  t.equal(await count.textContent(), '2016 programmes in 7 days');
  const items = await page.locator('[data-testid=epg-item]').count();
  t.comment(`2,016 programmes: ${items} rows in the DOM`);
  t.ok(items <= MAX_ROWS, `${items} rows drawn of 2,016`);
  const live = page.locator('[data-testid=epg-item].live');
  // The programme on air is the page's to decide by its own clock: a five-minute boundary may
  // pass between opening the page and reading the row, so either side of it is right.
  const slotAt = (sec: number) => sec - (sec % WEEK_STEP);
  const before = slotAt(Math.floor(Date.now() / 1000));
  await live.waitFor();
  const text = (await live.textContent()) ?? '';
  const after = slotAt(Math.floor(Date.now() / 1000));
  const slot = text.includes(`week ${after}`) ? after : before;
  t.match(
    text,
    `${local(slot)}–${local(slot + WEEK_STEP)}week ${slot}`,
    'opens at the programme on air, in local time',
  );
  await live.focus();
  await page.keyboard.press('End');
  const last = localToday + 7 * DAY - WEEK_STEP;
  await page.locator(`[data-testid=epg-item]:has-text("week ${last}")`).waitFor();
  t.match(
    await page.locator('[data-testid=epg-item]:focus').textContent(),
    `23:55–00:00week ${last}`,
    'End: the last programme of the seventh local day',
  );
  await page.keyboard.press('Home');
  await page.locator(`[data-testid=epg-item]:has-text("week ${localToday}")`).waitFor();
  t.match(
    await page.locator('[data-testid=epg-item]:focus').textContent(),
    `00:00–00:05week ${localToday}`,
    'Home: the first, at local midnight',
  );
  t.ok((await page.locator('[data-testid=epg-item]').count()) <= MAX_ROWS, 'still bounded');
});
