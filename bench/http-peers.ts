// Not a bench: the helper bench/ott-delivery.ts and bench/epg-serve.ts share. nginx as the
// static-file peer (run as our own child on a free loopback port with its own temporary config
// and prefix, never the system's; one worker, access log off) and wrk (one thread) driving a
// URL. Each bench says how nginx serves its files (the `NginxStyle`): segments at nginx's
// fastest on loopback, EPG documents at its defaults.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { freePort } from '../test/helpers/server.ts';

const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;
const POLL_MS = 50;

export interface Nginx {
  port: number;
  stop(): Promise<void>;
}

/** How nginx serves the bench's files: MIME types, `http` directives, the `location /` body. */
export interface NginxStyle {
  types: string;
  workerConnections: number;
  http?: string;
  location?: string;
}

/** Segments with nginx at its fastest for this work on loopback: `sendfile off` with two 1 MB
 *  output buffers was ~1.5× the requests/s of `sendfile on` for the same 2 MB file (sendfile's
 *  page-cache splice is its slowest path on loopback), an open-file cache so no request opens
 *  the file, long keep-alive. The bench compares sluice with this, not with a default. */
export const SEGMENT_STYLE: NginxStyle = {
  types: 'video/mp2t ts; application/vnd.apple.mpegurl m3u8;',
  workerConnections: 4096,
  http:
    'sendfile off;\n  output_buffers 2 1m;\n  open_file_cache max=64 inactive=60s;\n' +
    '  open_file_cache_valid 60s;\n  keepalive_requests 1000000;',
};

/** EPG documents, never cached by clients (as the server answers them). nginx's defaults
 *  otherwise (sendfile off, no open-file cache, keepalive_requests 1000). */
export const EPG_STYLE: NginxStyle = {
  types: 'application/json json; application/octet-stream gz;',
  workerConnections: 1024,
  location: 'add_header Cache-Control "no-cache, no-store, must-revalidate";',
};

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Serve `root` on 127.0.0.1 with one worker process (one core, like one sluice process). */
export async function startNginx(prefix: string, root: string, style: NginxStyle): Promise<Nginx> {
  const port = await freePort();
  const tmp = join(prefix, 'tmp');
  mkdirSync(tmp, { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events { worker_connections ${style.workerConnections}; }
http {
  access_log off;
  ${style.http ?? ''}
  client_body_temp_path ${tmp};
  proxy_temp_path ${tmp};
  fastcgi_temp_path ${tmp};
  uwsgi_temp_path ${tmp};
  scgi_temp_path ${tmp};
  types { ${style.types} }
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / { ${style.location ?? ''} }
  }
}
`,
  );
  const proc: ChildProcess = spawn(
    'nginx',
    ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await listening(port))) {
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
      const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
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
const UNIT_MB: Record<string, number> = { B: 1 / 1048576, KB: 1 / 1024, MB: 1, GB: 1024 };

/** Run wrk (one thread) against `url`; requests/s, transfer and latency percentiles. */
export function wrk(
  url: string,
  opts: { seconds: number; connections: number; headers?: string[] },
): WrkFigures {
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency'];
  for (const h of opts.headers ?? []) args.push('-H', h);
  const r = spawnSync('wrk', [...args, url], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(r.stdout);
  if (errors) throw new Error(`wrk saw ${errors[1]} error responses from ${url}`);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(r.stdout);
    return m ? Number(m[1]) * UNIT_MS[m[2]!]! : Number.NaN;
  };
  const tm = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(r.stdout);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]),
    p50Ms: pct('50'),
    p99Ms: pct('99'),
    mbPerSec: tm ? Number(tm[1]) * UNIT_MB[tm[2]!]! : 0,
  };
}
