// What a newcomer sees first (issue 36, items 4 and 5): `/` leads to the dashboard (a JSON index
// for a client asking for JSON, or while the dashboard is off); the stream page's archive block
// in sizes and times a person reads; no HTTP-TS link where /{name}/mpegts is a 404 (ott-http 0);
// a mosaic without thumbnails says how to turn them on. Chromium from 127.0.0.1 (anonymous admin).
import { join } from 'node:path';
import t from 'tap';
import { freePort, startServer, tempDir, waitFor } from '../helpers/server.ts';
import { ensureUiBuilt, launch, SMALL_TEST_INPUT, screenshots } from '../helpers/web.ts';

const TIMEOUT_MS = 30_000;

ensureUiBuilt();
const tmp = await tempDir(t, 'sluice-web-first-');
const srv = await startServer(t, {
  config: {
    'dvr-storage-list': { storage: [{ id: 1, name: 'arch', 'dir-path': join(tmp, 'archive') }] },
    stream: [
      {
        id: 1,
        'stream-name': 'rec',
        pause: false,
        'ott-hls': 1,
        'dvr-storage': 1,
        'dvr-hours': 1,
        input: [SMALL_TEST_INPUT],
      },
      {
        id: 2,
        'stream-name': 'plain',
        pause: false,
        'ott-http': 1,
        input: [{ type: 'udp', address: '127.0.0.1', port: await freePort() }],
      },
    ],
  },
});
const ui = `${srv.url}/ui/`;
const shot = screenshots(t, tmp);
const ctx = await launch(join(tmp, 'profile'));
t.teardown(() => ctx.close());

t.test('GET / sends a browser to the dashboard, a JSON client to an index', async (t) => {
  const browser = await fetch(`${srv.url}/`, {
    redirect: 'manual',
    headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
  });
  t.equal(browser.status, 302);
  t.equal(browser.headers.get('location'), '/ui/');
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${srv.url}/`);
  t.equal(new URL(page.url()).pathname, '/ui/', 'Chromium lands on the dashboard');

  const json = await fetch(`${srv.url}/`, { headers: { accept: 'application/json' } });
  t.equal(json.status, 200);
  const index = (await json.json()) as { dashboard: string; links: Record<string, string> };
  t.equal(index.dashboard, '/ui/');
  t.ok(index.links['/data/status'] && index.links['/config'] && index.links['/metrics']);
  t.ok((await fetch(`${srv.url}${Object.keys(index.links)[0]}`)).ok, 'its links answer');
});

t.test('the archive block reads as sizes and times; only working links', async (t) => {
  await waitFor(
    'an archive write',
    async () => {
      const s = (await (await fetch(`${srv.url}/data/stream/1`)).json()) as {
        ott?: { dvr?: { lastWriteAt?: number } };
      };
      return (s.ott?.dvr?.lastWriteAt ?? 0) > 0 ? true : undefined;
    },
    TIMEOUT_MS,
  );
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/stream/1`);
  const archive = page.getByTestId('archive');
  await archive.waitFor({ timeout: TIMEOUT_MS });
  await shot(page, 'stream-rec');
  const written = await archive.locator('[data-field=bytes]').textContent();
  t.match(written, /^\d+(\.\d)? (B|KiB|MiB|GiB)$/, `size with its unit: ${written}`);
  const last = await archive.locator('[data-field=lastWriteAt]').textContent();
  t.match(last, /\d{1,2}:\d{2}:\d{2}.*\(\d+ s ago\)$/, `a local time and how long ago: ${last}`);
  t.notMatch(await archive.textContent(), /\d{10,}/, 'no raw byte count or epoch milliseconds');
  t.match(await archive.textContent(), /last write/, 'labels in words');

  const labels = await page.locator('ul.urls .label').allTextContents();
  t.notOk(labels.includes('HTTP-TS'), `ott-http 0: no HTTP-TS link (${labels.join(', ')})`);
  t.ok(labels.includes('HLS'), 'the HLS link it does serve');

  await page.goto(`${ui}#/stream/2`);
  await page.locator('ul.urls').waitFor({ timeout: TIMEOUT_MS });
  await page.locator('ul.urls .label', { hasText: 'HTTP-TS' }).waitFor({ timeout: TIMEOUT_MS });
  const href = await page.locator('ul.urls a').first().getAttribute('href');
  t.match(href, /\/plain\/mpegts$/, 'ott-http 1: the HTTP-TS link');
});

t.test('the mosaic without thumbnails says how to turn them on', async (t) => {
  const page = await ctx.newPage();
  t.teardown(() => page.close());
  await page.goto(`${ui}#/mosaic`);
  const hint = page.getByTestId('mosaic-off');
  await hint.waitFor({ timeout: TIMEOUT_MS });
  t.match(await hint.textContent(), /mosaic.*enable.*true/);
  t.equal(await page.locator('.mosaic img').count(), 0, 'no blank thumbnails');
  await shot(page, 'mosaic-off');
});

t.test('with the dashboard off, / is the JSON index and says how to turn it on', async (t) => {
  const r = await fetch(`${srv.url}/config/web-server`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ enable: false }),
  });
  t.ok(r.ok, `PATCH web-server: ${r.status} ${await r.text()}`);
  const index = await waitFor('the index without the dashboard', async () => {
    const res = await fetch(`${srv.url}/`, { redirect: 'manual' });
    return res.status === 200 ? ((await res.json()) as Record<string, unknown>) : undefined;
  });
  t.equal(index['dashboard'], null);
  t.match(index['hint'], /web-server\.enable/);
  t.ok((index['links'] as Record<string, string>)['/data/status']);
});
