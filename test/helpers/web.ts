// Dashboard tests: the bundle built when stale (as scripts/setup does), a TCP relay that makes
// Chromium's requests come from 127.0.0.2 (127.0.0.1 is anonymous admin), and a Chromium
// context signed in with Digest credentials.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from './browser.ts';
import { REPO_ROOT, type Teardown } from './server.ts';

/** The cheapest `test` input: a dashboard test needs a running stream, not a picture. */
export const SMALL_TEST_INPUT: Readonly<Record<string, unknown>> = {
  type: 'test',
  width: 160,
  height: 90,
  'frame-rate': 10,
  'video-bitrate': 100,
  'enable-overlay': false,
};

/** Screenshots taken into `dir`/shots, copied at teardown to the folder SLUICE_KEEP_SHOTS names
 *  (when it is set): `shot(page, name)` writes `name.png`. */
export function screenshots(
  t: Teardown,
  dir: string,
): (page: Page, name: string) => Promise<Buffer> {
  const shots = join(dir, 'shots');
  t.teardown(async () => {
    const keep = process.env['SLUICE_KEEP_SHOTS'];
    if (keep) await cp(shots, keep, { recursive: true });
  });
  return (page, name) => page.screenshot({ path: join(shots, `${name}.png`) });
}

const STAMP = join(REPO_ROOT, 'dist/ui/.stamp');

function newest(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((m, e) => {
    const p = join(dir, e.name);
    return Math.max(m, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }, 0);
}

/** Build dist/ui when a front-end source is newer than the last build. */
export function ensureUiBuilt(): void {
  const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0;
  const sources = Math.max(
    newest(join(REPO_ROOT, 'src/web/ui')),
    statSync(join(REPO_ROOT, 'scripts/build-web.ts')).mtimeMs,
  );
  if (built >= sources) return;
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build-web.ts'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`build-web failed: ${r.stderr}${r.stdout}`);
}

/** An address on loopback that is not 127.0.0.1, so not anonymous. */
export const OTHER_LOCAL = '127.0.0.2';

/** Listens on 127.0.0.1 and forwards each connection to `port` from 127.0.0.2. */
export async function startRelay(port: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port, localAddress: OTHER_LOCAL });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export const VIEWPORT = { width: 1280, height: 720 };

/** `timezoneId`: the zone the pages see (an IANA name); the machine's when not given. */
export async function launch(
  profile: string,
  credentials?: { username: string; password: string },
  timezoneId?: string,
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: VIEWPORT,
    ...(credentials ? { httpCredentials: credentials } : {}),
    ...(timezoneId ? { timezoneId } : {}),
  });
}
