// A real etcd (Debian's etcd-server) for the fleet tests: one member on free loopback ports
// with its own temporary data dir, stopped (SIGKILL: nothing to keep) on teardown.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort, type TapLike, tempDir, waitFor } from './stream-host.ts';

export interface TestEtcd {
  /** The client URL (http://127.0.0.1:port). */
  url: string;
  output(): string;
  /** SIGKILL it (its data dir stays). */
  kill(): Promise<void>;
  /** Start it again on the same ports and data dir. */
  restart(): Promise<void>;
}

export async function startEtcd(t: TapLike): Promise<TestEtcd> {
  const dir = tempDir(t, 'sluice-etcd-');
  const [client, peer] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  let out = '';
  let proc = run();
  const kill = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await gone;
  };
  t.teardown(kill);
  const healthy = () =>
    waitFor(
      async () => {
        const r = await fetch(`${url}/health`).catch(() => undefined);
        return r?.ok ? ((await r.json()) as { health: string }).health === 'true' : false;
      },
      20_000,
      'etcd healthy',
    );
  await healthy();
  return {
    url,
    output: () => out,
    kill,
    restart: async () => {
      await kill();
      proc = run();
      await healthy();
    },
  };

  function run() {
    const p = spawn(
      'etcd',
      [
        '--name',
        'test',
        '--data-dir',
        join(dir, 'data'),
        '--listen-client-urls',
        url,
        '--advertise-client-urls',
        url,
        '--listen-peer-urls',
        peerUrl,
        '--initial-advertise-peer-urls',
        peerUrl,
        '--initial-cluster',
        `test=${peerUrl}`,
        '--log-level',
        'warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keep = (b: Buffer) => {
      out = (out + b.toString()).slice(-20_000);
    };
    p.stdout.on('data', keep);
    p.stderr.on('data', keep);
    return p;
  }
}
