import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import t from 'tap';
import { terrestrialNit, transponderWithNit } from '../helpers/dvb-nit.ts';
import { fakeDvb } from '../helpers/fake-dvb.ts';
import { startServer, waitFor } from '../helpers/server.ts';
import { ensureUiBuilt, launch } from '../helpers/web.ts';

// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the browser
declare const document: any, location: any, getComputedStyle: any;

const TIMEOUT_MS = 30_000;
const SECONDS = 4;
const FREQ_KHZ = 602000;

ensureUiBuilt();
const fake = await fakeDvb(t);

/** An MPTS of two programmes with a NIT that announces only its own transponder (so a scan
 *  ends as soon as the tables are read). */
function transponder(file: string): number {
  const programmes = [
    { pnr: 101, title: 'One' },
    { pnr: 102, title: 'Two' },
  ];
  const nit = terrestrialNit(0x2001, 'Sluice Net', [{ tsid: 1, kHz: FREQ_KHZ }]);
  return transponderWithNit(file, programmes, nit, SECONDS);
}

const mux = join(fake.dir, 'mux.ts');
fake.setMux([{ system: 3, freq: FREQ_KHZ * 1000, bitrate: transponder(mux), file: mux }]);
const GOOD = { cnr: 28100, signal: -48000, ber: 0, bits: 1000000, unc: 0 };
fake.setControl(GOOD);
const srv = await startServer(t, {
  env: fake.env({ FAKE_DVB_DELSYS: '3,16', FAKE_DVB_ADAPTERS: '0.0,2.0' }) as Record<
    string,
    string
  >,
  config: {
    'dvb-adapter': [
      { id: 1, name: 'terrestrial', type: 3, freq: FREQ_KHZ, adapter: 0, pause: false },
      { id: 3, name: 'missing', type: 3, freq: FREQ_KHZ, adapter: 7, pause: false },
      { id: 4, name: 'scanner', mode: 1, type: 3, adapter: 2, pause: false },
    ],
    stream: [
      {
        id: 1,
        'stream-name': 'dvb',
        pause: false,
        input: [{ type: 'dvb', 'adapter-id': 1 }],
      },
      {
        id: 2,
        'stream-name': 'two',
        pause: false,
        input: [{ type: 'demuxer', src: 1, 'mpts-id': 1, pnr: 102 }],
      },
    ],
  },
});
const ui = `${srv.url}/ui/`;
const ctx = await launch(join(fake.dir, 'profile'));
t.teardown(() => ctx.close());
const shots = join(fake.dir, 'shots');
t.teardown(async () => {
  const keep = process.env['SLUICE_KEEP_SHOTS'];
  if (keep) await cp(shots, keep, { recursive: true });
});
const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`) });

const row = (page: Page, name: string) => page.locator(`tr[data-adapter="${name}"]`);

t.test('the list: figures, readers, faults marked, live', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/adapters`);
  await page.locator('tr[data-adapter="terrestrial"][data-state="locked"]').waitFor({
    timeout: TIMEOUT_MS,
  });
  const good = row(page, 'terrestrial');
  t.equal(await good.getByTestId('signal').textContent(), '-48.0 dBm');
  t.equal(await good.getByTestId('snr').textContent(), '28.1 dB');
  t.equal(await good.getByTestId('ber').textContent(), '0');
  t.equal(await good.getByTestId('unc').textContent(), '0');
  t.equal(await good.getByTestId('lock').textContent(), 'yes');
  t.match(await good.textContent(), /DVB-T.*stream.*602\.000 MHz/);
  await page.waitForFunction(
    () => document.querySelectorAll('tr[data-adapter="terrestrial"] [data-reader]').length === 2,
    undefined,
    { timeout: TIMEOUT_MS },
  );
  t.same(
    await page.evaluate(() =>
      [...document.querySelectorAll('tr[data-adapter="terrestrial"] [data-reader]')].map(
        (e: { dataset: { reader: string } }) => e.dataset.reader,
      ),
    ),
    ['dvb', 'two'],
    'the dvb input and the demuxer read it',
  );
  t.notOk(await good.getAttribute('class'), 'a locked adapter is not marked');

  await page.locator('tr[data-adapter="missing"][data-state="error"]').waitFor();
  t.equal(await row(page, 'missing').getAttribute('class'), 'attention', 'a failed one is marked');
  t.match(await row(page, 'missing').textContent(), /No such file or directory/);
  t.equal(await row(page, 'scanner').getAttribute('class'), '', 'a ready scanner is not');
  t.match(await row(page, 'scanner').textContent(), /scanner.*ready/);
  t.equal(await page.getByTestId('attention').textContent(), '1 without lock or failed');
  t.equal(
    await page.locator('nav a[href="#/adapters"] .badge').textContent(),
    '1',
    'and counted in the navigation',
  );
  const fill: string[] = await page.evaluate(() => {
    const s = getComputedStyle(document.querySelector('tr[data-adapter="missing"] td'));
    return [s.backgroundColor, s.boxShadow];
  });
  t.not(fill[0], 'rgba(0, 0, 0, 0)', 'a marked row has a tinted background');
  t.match(fill[1], /inset/, 'and a bar at its start');
  await shot(page, 'adapters');

  fake.setControl({ lock: 0 });
  await page.locator('tr[data-adapter="terrestrial"][data-state="no lock"]').waitFor({
    timeout: TIMEOUT_MS,
  });
  t.equal(await good.getAttribute('class'), 'attention', 'lock lost: marked without a reload');
  t.equal(await good.getByTestId('lock').textContent(), 'no');
  t.equal(await page.getByTestId('attention').textContent(), '2 without lock or failed');
  fake.setControl(GOOD);
  await page.locator('tr[data-adapter="terrestrial"][data-state="locked"]').waitFor({
    timeout: TIMEOUT_MS,
  });
  t.notOk(await good.getAttribute('class'), 'locked again: no longer marked');
});

t.test('one adapter: status and the streams that read it', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/adapters`);
  await row(page, 'terrestrial').getByRole('link', { name: 'terrestrial' }).click();
  await page.waitForFunction(() => /^#\/adapter\//.test(location.hash));
  await page.getByTestId('state').waitFor();
  await page.waitForFunction(
    () => document.querySelector('[data-testid=state]')?.textContent === 'locked',
    undefined,
    { timeout: TIMEOUT_MS },
  );
  const status = await page.getByTestId('status').textContent();
  t.match(status, /SystemDVB-T/);
  t.match(status, /Deviceadapter0\/frontend0/);
  t.match(status, /Frontendsluice fake frontend/);
  t.match(status, /Signal-48\.0 dBm/);
  t.match(status, /Frequency602\.000 MHz/);
  await page.locator('[data-testid=readers] [data-reader="dvb"]').click();
  await page.waitForFunction(() => location.hash === '#/stream/1');
  t.pass('a reader links to its stream');

  await page.goto(`${ui}#/adapter/3`);
  await page.locator('.attention-note').waitFor({ timeout: TIMEOUT_MS });
  t.match(
    await page.locator('.attention-note').textContent(),
    /^The adapter failed: open: No such file or directory/,
  );
});

t.test("a scanner's page starts a scan and lists what it found", async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/adapter/4`);
  await page.getByLabel('First transponder (kHz)').fill(String(FREQ_KHZ));
  await page.getByRole('button', { name: 'Scan' }).click();
  await page.waitForFunction(
    () => /Scan done/.test(document.querySelector('[data-testid=scan-state]')?.textContent ?? ''),
    undefined,
    { timeout: 60_000 },
  );
  const services: string[][] = await page.evaluate(() =>
    [...document.querySelectorAll('tr[data-service]')].map(
      (r: { querySelectorAll(s: string): Iterable<{ textContent: string }> }) =>
        [...r.querySelectorAll('td')].slice(-7).map((td) => td.textContent),
    ),
  );
  t.same(services, [
    ['One', 'FFmpeg', '101', 'TV', 'no', '4096 (0x1000)', '256, 257'],
    ['Two', 'FFmpeg', '102', 'TV', 'no', '4097 (0x1001)', '258, 259'],
  ]);
  t.match(
    await page.locator(`tr[data-transponder="${FREQ_KHZ}"]`).first().textContent(),
    /602000 kHz.*TS 1.*Sluice Net.*locked/,
  );
  await shot(page, 'scanner');
});

t.test('no adapters: the page says how to add one', async (t) => {
  const bare = await startServer(t, { config: {} });
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${bare.url}/ui/#/adapters`);
  const empty = page.getByTestId('adapters-empty');
  await empty.waitFor({ timeout: TIMEOUT_MS });
  t.match(await empty.textContent(), /No tuner adapter is configured.*dvb-adapter/);
  t.equal(await page.locator('table.adapters').count(), 0);
  await waitFor('no adapters', async () =>
    ((await (await fetch(`${bare.url}/data/dvb-adapter`)).json()) as unknown[]).length === 0
      ? true
      : undefined,
  );
});
