// Local inputs that cannot deliver, as an operator meets them: a missing file, a file that is
// not TS (read at a sane rate, not as fast as the disk goes, and named as such), a std command
// that is not executable or does not exist, one that exits at once (restarted with backoff, no
// flood). Each shows a clear input state and message in the status. Pacing and restarts run on
// the stream's clock: those tests drive a WatchedClock instead of waiting for real time.
import { chmodSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import type { Host } from '../../src/reconciler/driver.ts';
import { WatchedClock } from '../helpers/clock.ts';
import { makeHost, openStream, tempDir, waitFor } from '../helpers/stream-host.ts';

const dir = tempDir(t);
const host = makeHost(dir);

const stream = (
  name: string,
  input: Record<string, unknown>,
  on: Host = host,
): Promise<StreamInstance> =>
  openStream(t, on, { 'stream-name': name, 'stream-timeout': 2_000_000, input: [input] });

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
  const clock = new WatchedClock();
  const s = await stream('notts', { type: 'file', 'file-path': text }, { ...host, clock });
  // Past its first megabyte the input sleeps on the stream's clock between reads.
  await waitFor(() => clock.pending > 0, 3000, 'the file input pacing its reads');
  const bytes = () => Number(in0(s).transport!['bytes']);
  const b0 = bytes();
  const MEASURE_MS = 2000;
  let elapsed = 0;
  while (elapsed < MEASURE_MS) {
    const step = Math.min(clock.untilNext(), MEASURE_MS - elapsed);
    // When the step reaches the input's timer, it reads on and sleeps again: wait for that.
    const slept = step === clock.untilNext() ? clock.armed('the next paced read') : undefined;
    clock.advance(step);
    elapsed += step;
    await slept;
  }
  const rate = ((bytes() - b0) * 8) / (elapsed / 1000);
  // Paced like a file without PCR (4 Mbit/s), not at the speed of the page cache (Gbit/s).
  t.ok(rate < 8_000_000, `read at ${(rate / 1e6).toFixed(1)} Mbit/s`);
  t.ok(rate > 3_000_000, 'and it does go on reading at about that rate');
  // Judged on the analyzer's figures, sampled on the stream's clock (moved 2 s just now).
  await waitFor(() => in0(s)['state'] === 'error', 3000, 'input error');
  t.match(in0(s)['message'], /not a transport stream/);
  t.not(s.state(), 'running');
});

t.test('std: not executable, no such command, exits at once', async (t) => {
  const notExec = join(dir, 'notexec');
  writeFileSync(notExec, '#!/bin/sh\nexit 0\n');
  chmodSync(notExec, 0o644);
  const a = await stream('noexec', { type: 'std', 'std-cmd': notExec });
  const b = await stream('nocmd', { type: 'std', 'std-cmd': join(dir, 'no-such-command') });
  const clock = new WatchedClock();
  const c = await stream('exits', { type: 'std', 'std-cmd': '/bin/false' }, { ...host, clock });
  await waitFor(
    () => [a, b, c].every((s) => in0(s)['state'] === 'error'),
    3000,
    'three input errors',
  );
  t.match(in0(a)['message'], /not executable/);
  t.match(in0(b)['message'], /no such file/);
  t.match(in0(c)['message'], /exited with code 1/);
  // Backoff 0.5, 1, 2, 4 s … on the stream's clock: within 4 s of it four starts, not one per
  // event-loop turn. Real time passing restarts nothing.
  const starts = () => Number(in0(c).transport!['starts']);
  t.equal(starts(), 1, 'one start while the stream clock stands still');
  let elapsed = 0;
  for (const delay of [500, 1000, 2000]) {
    t.equal(clock.untilNext(), delay, `the next start is due in ${delay} ms`);
    const before = starts();
    clock.advance(delay - 1);
    t.equal(starts(), before, `not restarted 1 ms before ${delay} ms`);
    const exited = clock.armed(`start ${before + 1} to exit and be rescheduled`);
    clock.advance(1);
    t.equal(starts(), before + 1, `restarted after ${delay} ms`);
    await exited;
    elapsed += delay;
  }
  clock.advance(4000 - elapsed);
  const n = starts();
  t.ok(n >= 2 && n <= 5, `${n} starts of /bin/false in 4 s`);
  t.equal(n, 4, 'at 0, 0.5, 1.5 and 3.5 s');
  t.equal(clock.untilNext(), 3500, 'the fifth is due at 7.5 s');
});
