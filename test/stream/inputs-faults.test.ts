// Local inputs that cannot deliver, as an operator meets them: a missing file, a file that is
// not TS (read at a sane rate, not as fast as the disk goes, and named as such), a std command
// that is not executable or does not exist, one that exits at once (restarted with backoff, no
// flood). Each shows a clear input state and message in the status.
import { chmodSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { makeHost, streamResource, tempDir, waitFor } from '../helpers/stream-host.ts';

const dir = tempDir(t);
const host = makeHost(dir);
const driver = new StreamDriver();

async function stream(name: string, input: Record<string, unknown>): Promise<StreamInstance> {
  const inst = (await driver.create(
    streamResource({ 'stream-name': name, 'stream-timeout': 2_000_000, input: [input] }),
    host,
  )) as StreamInstance;
  t.teardown(() => inst.close());
  return inst;
}

type In = Record<string, unknown> & { transport?: Record<string, unknown> };
const in0 = (s: StreamInstance) => (s.status()['inputs'] as In[])[0]!;

t.test('missing file: error state naming the file', async (t) => {
  const s = await stream('missing', { type: 'file', 'file-path': join(dir, 'nope.ts') });
  await waitFor(() => in0(s)['state'] === 'error', 3000, 'input error');
  t.match(in0(s)['message'], /ENOENT.*nope\.ts/);
  await waitFor(
    () => (s.status()['alerts'] as { key: string }[]).some((a) => a.key === 'input-0-failed'),
    2000,
    'alert',
  );
  const alert = (s.status()['alerts'] as { key: string; message: string }[]).find(
    (a) => a.key === 'input-0-failed',
  );
  t.match(alert?.message, /input 0: ENOENT/, 'input-0-failed alert says why');
});

t.test('tcp: a server that accepts and closes at once', async (t) => {
  const server = net.createServer((c) => c.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const s = await stream('tcpclose', { type: 'tcp', port });
  await waitFor(() => in0(s)['state'] === 'error', 3000, 'input error');
  t.match(in0(s)['message'], /closed by the server/);
});

t.test('a file that is not TS: paced, named, never valid', async (t) => {
  const text = join(dir, 'text.txt');
  writeFileSync(text, 'not a transport stream\n'.repeat(20_000)); // 460 KB
  const s = await stream('notts', { type: 'file', 'file-path': text });
  await waitFor(() => in0(s)['state'] === 'error', 3000, 'input error');
  t.match(in0(s)['message'], /not a transport stream/);
  const bytes = () => Number(in0(s).transport!['bytes']);
  const b0 = bytes();
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, 2000));
  const rate = ((bytes() - b0) * 8) / ((Date.now() - t0) / 1000);
  // Paced like a file without PCR (4 Mbit/s), not at the speed of the page cache (Gbit/s).
  t.ok(rate < 8_000_000, `read at ${(rate / 1e6).toFixed(1)} Mbit/s`);
  t.not(s.state(), 'running');
});

t.test('std: not executable, no such command, exits at once', async (t) => {
  const notExec = join(dir, 'notexec');
  writeFileSync(notExec, '#!/bin/sh\nexit 0\n');
  chmodSync(notExec, 0o644);
  const a = await stream('noexec', { type: 'std', 'std-cmd': notExec });
  const b = await stream('nocmd', { type: 'std', 'std-cmd': join(dir, 'no-such-command') });
  const c = await stream('exits', { type: 'std', 'std-cmd': '/bin/false' });
  await waitFor(
    () => [a, b, c].every((s) => in0(s)['state'] === 'error'),
    3000,
    'three input errors',
  );
  t.match(in0(a)['message'], /not executable/);
  t.match(in0(b)['message'], /no such file/);
  t.match(in0(c)['message'], /exited with code 1/);
  // Backoff 0.5, 1, 2, 4 s …: within 4 s at most four starts, not one per event-loop turn.
  await new Promise((r) => setTimeout(r, 4000));
  const starts = Number(in0(c).transport!['starts']);
  t.ok(starts >= 2 && starts <= 5, `${starts} starts of /bin/false in ~4 s`);
});
