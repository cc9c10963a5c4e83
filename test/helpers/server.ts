// Starts the real server (`node bin/sluice.js serve`) as a child process on a free loopback
// port with a temp data dir, waits until /data/status answers, and tears it all down.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SLUICE_BIN = path.join(REPO_ROOT, 'bin/sluice.js');
/** Start-up includes tsx compiling the sources on a busy 2-core machine. */
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 8_000;
const POLL_MS = 100;

/** What tap's `t` offers that the helper needs (kept narrow so any test object fits). */
export interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export async function tempDir(t: Teardown, prefix = 'sluice-test-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The config members that put the admin API and the EPG server on the given loopback ports,
 *  so tests running side by side never meet on the default ports. */
export function loopbackServers(
  doc: Record<string, unknown>,
  port: number,
  epgPort: number,
): Record<string, unknown> {
  const http = (doc['http-server'] as object | undefined) ?? {};
  const epg = (doc['epg-server'] as object | undefined) ?? {};
  return {
    ...doc,
    'http-server': { ...http, port, 'bind-address': '127.0.0.1' },
    'epg-server': { ...epg, port: epgPort, 'bind-address': '127.0.0.1' },
  };
}

export interface ServerOptions {
  /** Config document written to `<dir>/config.json` (http-server port and bind filled in). */
  config?: Record<string, unknown>;
  /** Use this config file as it is (the caller set the port). */
  configPath?: string;
  /** Other `serve` arguments, e.g. `['--git', url, '--poll', '1']` (then give `port`, and
   *  put loopbackServers() into the committed config). */
  args?: string[];
  port?: number;
  dataDir?: string;
  env?: Record<string, string>;
}

export interface ServerHandle {
  url: string;
  port: number;
  dir: string;
  dataDir: string;
  configPath: string | undefined;
  proc: ChildProcess;
  /** stdout + stderr so far (for failure messages). */
  output(): string;
  /** Resolves with the exit code / signal when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, wait (bounded), then SIGKILL. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL at once, no clean-up in the server. */
  kill9(): Promise<void>;
}

/** `SLUICE_TEST_STREAM_WORKERS=N` runs a test's servers with `server.stream-workers` N (where
 *  its config does not say): the same tests, with streams in worker threads. */
function withStreamWorkers(config: Record<string, unknown>): Record<string, unknown> {
  const n = Number(process.env['SLUICE_TEST_STREAM_WORKERS'] ?? 0);
  if (!(n > 0)) return config;
  const server = (config['server'] ?? {}) as Record<string, unknown>;
  if (server['stream-workers'] !== undefined) return config;
  return { ...config, server: { ...server, 'stream-workers': n } };
}

export async function startServer(t: Teardown, opts: ServerOptions = {}): Promise<ServerHandle> {
  const dir = await tempDir(t);
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? path.join(dir, 'data');
  let configPath = opts.configPath;
  if (opts.config) {
    configPath = path.join(dir, 'config.json');
    const doc = loopbackServers(withStreamWorkers(opts.config), port, await freePort());
    await writeFile(configPath, `${JSON.stringify(doc, null, 2)}\n`);
  }
  const args = [SLUICE_BIN, 'serve', '--data-dir', dataDir];
  if (configPath) args.push('--config', configPath);
  args.push(...(opts.args ?? []));
  const proc = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, SLUICE_LOG_LEVEL: 'warn', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-20_000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let done = false;
  void exited.then(() => {
    done = true;
  });

  const handle: ServerHandle = {
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    dataDir,
    configPath,
    proc,
    output: () => out,
    exited,
    async stop() {
      if (!done) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
        const r = await exited;
        clearTimeout(timer);
        return r;
      }
      return exited;
    },
    async kill9() {
      if (!done) proc.kill('SIGKILL');
      await exited;
    },
  };
  t.teardown(() => handle.stop());

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (done) throw new Error(`server exited before it was ready:\n${out}`);
    try {
      const res = await fetch(`${handle.url}/data/status`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await handle.stop();
      throw new Error(`server not ready within ${READY_TIMEOUT_MS} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return handle;
}

/** Poll `probe` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Run the CLI as a child process; resolves with its exit code and output. */
export async function runCli(
  args: string[],
  opts: { cwd?: string; timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [SLUICE_BIN, ...args], {
    cwd: opts.cwd ?? REPO_ROOT,
    env: { ...process.env, SLUICE_LOG_LEVEL: 'warn', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (b: Buffer) => {
    stdout += b.toString();
  });
  proc.stderr.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}
