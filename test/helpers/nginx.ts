// nginx as a static origin for pull-input tests: our own child on a free loopback port with its
// own temporary prefix and config (never the system's), serving `root`; stopped on teardown.
// A master run as root keeps its worker as root too (the temporary roots are private to the
// user). `location` adds directives to `location /` (auth_basic, headers …). `runNginx` takes a
// whole `http {}` body (the cache tests run deploy/nginx/sluice-cache.conf).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { freePort, type TapLike, tempDir, waitFor } from './stream-host.ts';

export interface TestNginx {
  port: number;
  base: string;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export async function startNginx(
  t: TapLike,
  root: string,
  opts: { location?: string; server?: string } = {},
): Promise<TestNginx> {
  const port = await freePort();
  return runNginx(
    t,
    port,
    () => `  access_log off;
  types { video/mp2t ts; application/vnd.apple.mpegurl m3u8; video/mp4 mp4 m4s; }
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    ${opts.server ?? ''}
    location / { add_header Cache-Control no-cache; ${opts.location ?? ''} }
  }`,
  );
}

/**
 * nginx with `http(prefix)` as the body of its `http {}` block (temp paths are set already),
 * answering on `port` once it listens there; `prefix` is its private temporary directory.
 */
export async function runNginx(
  t: TapLike,
  port: number,
  http: (prefix: string) => string,
): Promise<TestNginx & { prefix: string }> {
  const prefix = tempDir(t, 'sluice-nginx-');
  const tmp = join(prefix, 'tmp');
  mkdirSync(tmp, { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events { worker_connections 1024; }
http {
  client_body_temp_path ${tmp};
  proxy_temp_path ${tmp};
  fastcgi_temp_path ${tmp};
  uwsgi_temp_path ${tmp};
  scgi_temp_path ${tmp};
${http(prefix)}
}
`,
  );
  const proc = spawn('nginx', ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')], {
    stdio: 'ignore',
  });
  t.teardown(async () => {
    if (proc.exitCode !== null) return;
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGQUIT');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  });
  await waitFor(() => listening(port), 10_000, 'nginx listening');
  return { port, base: `http://127.0.0.1:${port}`, prefix };
}
