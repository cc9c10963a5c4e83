// Debian's Chromium for player tests (playwright-core), with the flags this closed network needs.
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { startOttServer, tempDir } from './ott.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
];
/** The repository root (player page and player libraries are served from it). */
export const ROOT = join(import.meta.dirname, '..', '..');

/** What tap's `t` offers that the helper needs. */
interface Teardown {
  teardown(fn: () => unknown): void;
}

/**
 * The player page (test/fixtures/ott/player.html) with hls.js and dash.js, served from a server
 * of its own — the players then fetch the streams cross-origin, as OTT answers allow — and a
 * Chromium context on a fresh profile; both are closed at `t`'s teardown.
 */
export async function playerPages(
  t: Teardown,
): Promise<{ context: BrowserContext; pageBase: string }> {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const { app, base } = await startOttServer(new Map(), {
    '/player.html': { path: join(ROOT, 'test/fixtures/ott/player.html'), type: 'text/html' },
    '/hls.min.js': {
      path: join(ROOT, 'node_modules/hls.js/dist/hls.min.js'),
      type: 'text/javascript',
    },
    '/dash.all.min.js': {
      path: join(ROOT, 'node_modules/dashjs/dist/modern/umd/dash.all.min.js'),
      type: 'text/javascript',
    },
  });
  t.teardown(() => app.close());
  const context = await chromium.launchPersistentContext(join(tmp.dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  t.teardown(() => context.close());
  return { context, pageBase: base };
}
