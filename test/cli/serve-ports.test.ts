// `sluice serve` with its ports taken: one line each names the port, the setting that moves it
// and the flag that overrides it for the run; `--port` / `--epg-port` do override the config.
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import {
  freePort,
  REPO_ROOT,
  runCli,
  SLUICE_BIN,
  startServer,
  type Teardown,
  tempDir,
  waitFor,
} from '../helpers/server.ts';

const START_TIMEOUT_MS = 30_000;

/** Hold `port` on 127.0.0.1 until the test ends. */
async function occupy(t: Teardown, port: number): Promise<void> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve());
  });
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())));
}

async function writeConfig(dir: string, httpPort: number, epgPort: number): Promise<string> {
  const file = join(dir, 'config.json');
  await writeFile(
    file,
    JSON.stringify({
      'http-server': { port: httpPort, 'bind-address': '127.0.0.1' },
      'epg-server': { port: epgPort, 'bind-address': '127.0.0.1' },
    }),
  );
  return file;
}

t.test('both ports taken: a line for each, naming port, setting and flag', async (t) => {
  const dir = await tempDir(t, 'sluice-ports-');
  const [http, epg] = [await freePort(), await freePort()];
  await occupy(t, http);
  await occupy(t, epg);
  const config = await writeConfig(dir, http, epg);
  const proc = spawn(
    process.execPath,
    [SLUICE_BIN, 'serve', '--config', config, '--data-dir', join(dir, 'data')],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, SLUICE_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  t.teardown(async () => {
    proc.kill('SIGKILL');
    await exited;
  });
  // Start-up writes its report in one go once the first apply has run: wait for that event.
  const lines = await new Promise<string[]>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`no start-up report:\n${err}`)),
      START_TIMEOUT_MS,
    );
    proc.stderr!.on('data', (b: Buffer) => {
      err += b.toString();
      const all = err.split('\n').filter((l) => l.startsWith('sluice: '));
      if (all.length >= 2) {
        clearTimeout(timer);
        resolve(all);
      }
    });
  });
  const admin = lines[0]!;
  t.match(admin, /^sluice: serving .*; admin API not listening: /);
  t.match(admin, `127.0.0.1:${http}`, 'names the port');
  t.match(admin, 'the port is in use by another program');
  t.match(admin, 'set http-server.port in the config', 'names the setting');
  t.match(admin, 'sluice serve --port <free port>', 'names the flag');
  t.notMatch(admin, '/data/status', 'does not point at a status page it cannot serve');
  const guide = lines[1]!;
  t.match(guide, /^sluice: EPG server cannot listen: HTTP 127\.0\.0\.1:/);
  t.match(guide, `127.0.0.1:${epg}`);
  t.match(guide, 'set epg-server.port in the config');
  t.match(guide, 'sluice serve --epg-port <free port>');
});

t.test('--port and --epg-port win over the config for the run', async (t) => {
  const dir = await tempDir(t, 'sluice-ports-');
  const [busyHttp, busyEpg] = [await freePort(), await freePort()];
  await occupy(t, busyHttp);
  await occupy(t, busyEpg);
  const [port, epgPort] = [await freePort(), await freePort()];
  const srv = await startServer(t, {
    configPath: await writeConfig(dir, busyHttp, busyEpg),
    port,
    args: ['--port', String(port), '--epg-port', String(epgPort)],
  });
  const status = (await (await fetch(`${srv.url}/data/status`)).json()) as {
    resources: { kind: string; status?: Record<string, unknown> }[];
  };
  const http = status.resources.find((r) => r.kind === 'http-server');
  t.equal(http?.status?.['http'], `127.0.0.1:${port}`, 'the admin API is on --port');
  const epg = await waitFor('the EPG server', async () => {
    const s = (await (await fetch(`${srv.url}/data/status`)).json()) as typeof status;
    return s.resources.find((r) => r.kind === 'epg-server' && r.status?.['http']);
  });
  t.equal(epg.status?.['http'], epgPort, 'the EPG server is on --epg-port');
  const cfg = (await (await fetch(`${srv.url}/config/http-server`)).json()) as { port: number };
  t.equal(cfg.port, busyHttp, 'the config itself is unchanged');
});

t.test('--port takes a port number only; --help documents both flags', async (t) => {
  const bad = await runCli(['serve', '--port', '70000']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, '--port must be a port number from 1 to 65535: 70000');
  const help = await runCli(['serve', '--help']);
  t.match(help.stdout + help.stderr, /--port N\s+listen for the admin API and OTT on port N/);
  t.match(help.stdout + help.stderr, /--epg-port N\s+the EPG server's HTTP port/);
});
