// Runs one `run` example of the docs (docs/examples.md) as written, on loopback: the example's
// addresses and ports mapped to 127.0.0.1 and free ports, against a real server started with
// the config above it, until it ends or every stream of that config is running.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { makeLavfiTs } from '../helpers/ffmpeg.ts';
import {
  freePort,
  REPO_ROOT,
  type ServerHandle,
  startServer,
  type Teardown,
  tempDir,
  waitFor,
} from '../helpers/server.ts';
import { playFixture } from '../helpers/stream-host.ts';
import { companionConfig, type Example } from './examples.ts';

/** The admin API's port in the docs (and the default); mapped to the started server's. */
const DOCS_ADMIN_PORT = 43971;
/** An example, a peer it feeds and the server all start well within this on a busy machine. */
const RUN_TIMEOUT_MS = 45_000;
const PROGRAM_SECONDS = 6;

/** Host names and addresses that stand for "a machine of yours" in the docs (RFC 2606 names,
 *  RFC 5737 addresses, `sluice` as a URL's host): all of them are this machine's loopback. */
const HOSTS =
  /<this machine's address>|\b(?:[a-z0-9-]+\.example(?:\.net)?|192\.0\.2\.\d+|198\.51\.100\.\d+|203\.0\.113\.\d+)\b|(?<=\/\/)sluice\b/g;

export interface Ran {
  output: string;
  code: number | null;
  /** Marked `until-running`: the streams of its config must run on what it sends. */
  hasStreams: boolean;
  /** The streams of the config were all running (the example then stopped if still on). */
  streamsRan: boolean;
}

/** Every port of the example and its config, each number mapped to one free port. */
async function portMap(text: string, config: string, admin: number): Promise<Map<number, number>> {
  const numbers = new Set<number>();
  for (const m of text.matchAll(/:(\d{2,5})\b/g)) numbers.add(Number(m[1]));
  for (const m of config.matchAll(/"(?:port|rist-addr-port)": \[?(\d+)/g))
    numbers.add(Number(m[1]));
  const map = new Map<number, number>([[DOCS_ADMIN_PORT, admin]]);
  for (const n of numbers) if (!map.has(n)) map.set(n, await freePort());
  return map;
}

function onLoopback(text: string, ports: Map<number, number>, json: boolean): string {
  const port = (n: string) => String(ports.get(Number(n)) ?? n);
  let out = text.replace(HOSTS, '127.0.0.1').replace(/\beth0\b/g, 'lo');
  out = out.replace(/:(\d{2,5})\b/g, (_, n: string) => `:${port(n)}`);
  if (json)
    out = out.replace(
      /("(?:port|rist-addr-port)": \[?)(\d+)/g,
      (_, k: string, n: string) => k + port(n),
    );
  return out;
}

async function streamsRunning(srv: ServerHandle): Promise<boolean> {
  const list = (await (await fetch(`${srv.url}/data/stream`)).json()) as { state: string }[];
  return list.length > 0 && list.every((s) => s.state === 'running');
}

function stopGroup(p: ChildProcess): void {
  if (p.exitCode === null && p.signalCode === null && p.pid) process.kill(-p.pid, 'SIGTERM');
}

/** The config a run block runs against: `on FILE` in its marker names a config of the
 *  repository, else the nearest config example above. */
function configFor(e: Example): string {
  const file = /\bon (\S+\.json)\b/.exec(e.note)?.[1];
  if (!file) return JSON.stringify(companionConfig(e), null, 2);
  return readFileSync(path.join(REPO_ROOT, file), 'utf8');
}

export async function runExample(t: Teardown, e: Example): Promise<Ran> {
  const dir = await tempDir(t, 'sluice-docs-run-');
  const configText = configFor(e);
  const admin = await freePort();
  const ports = await portMap(e.body, configText, admin);
  const config = JSON.parse(
    onLoopback(configText, ports, true).replaceAll('".data/', `"${dir}/data-example/`),
  ) as Record<string, unknown>;
  const srv = await startServer(t, { config, port: admin });
  const program = path.join(dir, 'program.ts');
  makeLavfiTs(program, { size: '320x240', seconds: PROGRAM_SECONDS, gop: 25 });
  const script = onLoopback(e.body, ports, false);
  // A block reading udp://:PORT is sent program.ts there, at its rate.
  for (const m of script.matchAll(/udp:\/\/:(\d+)/g)) {
    playFixture(t, program, 'mpegts', `udp://127.0.0.1:${m[1]}?pkt_size=1316`);
  }
  const env = Object.fromEntries(
    e.note
      .split(/\s+/)
      .filter((w) => w.includes('='))
      .map((w) => w.split('=', 2)),
  );
  // An HTTP error fails the example as a failed command does; `sluice` is this checkout's.
  const prelude = [
    'curl() { command curl --fail-with-body "$@"; }',
    `sluice() { node ${JSON.stringify(path.join(REPO_ROOT, 'bin/sluice.js'))} "$@"; }`,
  ].join('\n');
  const p = spawn('bash', ['-e', '-o', 'pipefail', '-c', `${prelude}\n${script}`], {
    cwd: dir,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => stopGroup(p));
  let output = '';
  p.stdout?.on('data', (b: Buffer) => (output += b));
  p.stderr?.on('data', (b: Buffer) => (output += b));
  const exited = new Promise<number | null>((resolve) => p.once('exit', (code) => resolve(code)));
  let code: number | null | undefined;
  void exited.then((c) => (code = c));
  // `until-running`: the block feeds the config's streams, maybe for ever (a peer that runs
  // until stopped); it has done its part once they all run. Any other block runs to its end.
  const hasStreams = /\buntil-running\b/.test(e.note);
  const streamsRan = await waitFor(
    `${e.where} to end${hasStreams ? ' or its streams to run' : ''}`,
    async () => {
      if (hasStreams && (await streamsRunning(srv))) return true;
      if (code === undefined) return undefined;
      return hasStreams ? streamsRunning(srv) : false;
    },
    RUN_TIMEOUT_MS,
  );
  stopGroup(p);
  await exited;
  return { output, code: code ?? null, hasStreams, streamsRan };
}
