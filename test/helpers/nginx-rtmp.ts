// nginx with the RTMP module (libnginx-mod-rtmp) as an RTMP origin for the `rtmp` input's
// tests: our own child on a free loopback port with its own temporary prefix and config,
// `load_module` of the packaged module, one `application` block per entry; stopped on
// teardown. One process (`master_process off`): killing it leaves no worker behind.
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { freePort, type TapLike, tempDir, waitFor } from './stream-host.ts';

export const RTMP_MODULE = '/usr/lib/nginx/modules/ngx_rtmp_module.so';

export function haveNginxRtmp(): boolean {
  return existsSync(RTMP_MODULE);
}

export interface TestRtmpOrigin {
  port: number;
  /** rtmp://127.0.0.1:port */
  base: string;
  stop(): Promise<void>;
}

/** `apps`: application name → directives inside its block (e.g. `live on;`). */
export async function startNginxRtmp(
  t: TapLike,
  apps: Record<string, string>,
): Promise<TestRtmpOrigin> {
  const prefix = tempDir(t, 'sluice-nginx-rtmp-');
  const port = await freePort();
  const conf = join(prefix, 'nginx.conf');
  const blocks = Object.entries(apps)
    .map(([name, body]) => `application ${name} { ${body} }`)
    .join('\n      ');
  writeFileSync(
    conf,
    `load_module ${RTMP_MODULE};
daemon off;
master_process off;
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'error.log')} warn;
events { worker_connections 256; }
rtmp {
  server {
    listen 127.0.0.1:${port};
    chunk_size 4096;
      ${blocks}
  }
}
`,
  );
  const proc = spawn('nginx', ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')], {
    stdio: 'ignore',
  });
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await gone;
  };
  t.teardown(stop);
  await waitFor(
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect({ host: '127.0.0.1', port }, () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      }),
    10_000,
    'nginx-rtmp listening',
  );
  return { port, base: `rtmp://127.0.0.1:${port}`, stop };
}
