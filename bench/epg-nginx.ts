// Bench helper: nginx as the static-file anchor, run on a free loopback port with its own
// temporary config and prefix (never the system's), and wrk driving a URL.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';

const START_TIMEOUT_MS = 10_000;
const POLL_MS = 50;

export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface Nginx {
  port: number;
  stop(): Promise<void>;
}

/** Serve `root` on 127.0.0.1 with one worker (the foreground master process, our child). */
export async function startNginx(prefix: string, root: string): Promise<Nginx> {
  const port = await freeLoopbackPort();
  mkdirSync(join(prefix, 'tmp'), { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${join(prefix, 'tmp')};
  proxy_temp_path ${join(prefix, 'tmp')};
  fastcgi_temp_path ${join(prefix, 'tmp')};
  uwsgi_temp_path ${join(prefix, 'tmp')};
  scgi_temp_path ${join(prefix, 'tmp')};
  types { application/json json; application/octet-stream gz; }
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / { add_header Cache-Control "no-cache, no-store, must-revalidate"; }
  }
}
`,
  );
  const proc: ChildProcess = spawn(
    'nginx',
    ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')],
    {
      stdio: 'ignore',
    },
  );
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error('nginx did not start');
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return {
    port,
    async stop() {
      if (proc.exitCode !== null) return;
      const gone = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGQUIT');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(timer);
    },
  };
}

export interface WrkFigures {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  mbPerSec: number;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000 };

/** Run wrk against `url` and read requests/s, transfer and the latency percentiles. */
export function wrk(
  url: string,
  opts: { seconds: number; connections: number; headers?: string[] },
): WrkFigures {
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency'];
  for (const h of opts.headers ?? []) args.push('-H', h);
  const r = spawnSync('wrk', [...args, url], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(r.stdout);
    return m ? Number(m[1]) * UNIT_MS[m[2]!]! : Number.NaN;
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]);
  const tm = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(r.stdout);
  const scale: Record<string, number> = { B: 1 / 1048576, KB: 1 / 1024, MB: 1, GB: 1024 };
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(r.stdout);
  if (errors) throw new Error(`wrk saw ${errors[1]} error responses from ${url}`);
  return {
    rps,
    p50Ms: pct('50'),
    p99Ms: pct('99'),
    mbPerSec: tm ? Number(tm[1]) * scale[tm[2]!]! : 0,
  };
}
