// hls.js in Debian's Chromium plays live HLS over TS from the real server, whose native live
// engine answers the playlists and segments (docs/ott.md, "Native live delivery"). The page
// comes from another origin, so CORS is exercised as a real web player meets it. Judged by
// video.currentTime advancing with no fatal error, and by the engine's served count.
import { createReadStream } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import t from 'tap';
import { CHROMIUM, CHROMIUM_ARGS, ROOT } from '../helpers/browser.ts';
import { deliveryStatus, firstLiveSegment, liveTsConfig } from '../helpers/ott.ts';
import { startServer, tempDir } from '../helpers/server.ts';

const PLAY_SECONDS = 8;
const PLAY_TIMEOUT_MS = 30_000;
const FILES: Record<string, [string, string]> = {
  '/player.html': ['test/fixtures/ott/player.html', 'text/html'],
  '/hls.min.js': ['node_modules/hls.js/dist/hls.min.js', 'text/javascript'],
  '/dash.all.min.js': ['node_modules/dashjs/dist/modern/umd/dash.all.min.js', 'text/javascript'],
};

t.test('hls.js plays HLS-TS served by the native engine, cross-origin', async (t) => {
  const srv = await startServer(t, { config: liveTsConfig() });
  await firstLiveSegment(srv.url);

  // The page and the player library from another origin (another port).
  const pages = createServer((req, res) => {
    const f = FILES[(req.url ?? '').split('?')[0]!];
    if (!f) return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': f[1] });
    createReadStream(join(ROOT, f[0])).pipe(res);
  });
  await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    pages.closeAllConnections();
    pages.close();
  });
  const pageBase = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;

  const before = (await deliveryStatus(srv.url))!;
  const dir = await tempDir(t);
  const context: BrowserContext = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  t.teardown(() => context.close());
  const page = await context.newPage();
  const src = encodeURIComponent(`${srv.url}/live/index.m3u8`);
  await page.goto(`${pageBase}/player.html?player=hls&ll=0&src=${src}`);
  const expr = "document.getElementById('v').currentTime";
  const report = () => page.evaluate<{ errors: string[]; playing: boolean }>('window.report');
  try {
    await page.waitForFunction(`${expr} >= ${PLAY_SECONDS}`, undefined, {
      timeout: PLAY_TIMEOUT_MS,
      polling: 200,
    });
  } catch {
    throw new Error(
      `currentTime stuck at ${await page.evaluate<number>(expr)} s: ${JSON.stringify(await report())}`,
    );
  }
  const r = await report();
  t.ok(r.playing, 'playing');
  t.same(
    r.errors.filter((e) => e.includes('(fatal)')),
    [],
    'no fatal error',
  );
  const after = (await deliveryStatus(srv.url))!;
  t.ok(after.adopted > before.adopted, 'the browser connected through the engine');
  // ~8 segments and as many playlist reloads at least, all answered natively.
  t.ok(
    after.served - before.served >= PLAY_SECONDS,
    `the engine answered the player: ${after.served - before.served} responses`,
  );
});
