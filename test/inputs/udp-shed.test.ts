// The udp input under overload: it hands its stream's `order` to the receive thread as the
// shedding priority, and a shed input says so — in its status and as its fault (the stream's
// input message, and its `input-N-failed` alert past alert-delay). Four inputs at 8 Mbit/s
// while their JS work is made slow enough that the thread carries about two of them.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import type { InputContext } from '../../src/engine/input.ts';
import { SHED_MESSAGE, UdpInput } from '../../src/inputs/udp/input.ts';
import { inputContext } from '../helpers/input-ctx.ts';
import { freePort } from '../helpers/server.ts';

const ORDERS = [0, 3, 6, 9];
const MBPS = 8;
const SECONDS = 8;
/** JS time per byte while slow: 2 MB/s carried, two of the four 1 MB/s streams. */
const SLOW_US_PER_BYTE = 0.5;

const dir = mkdtempSync(join(tmpdir(), 'sluice-udp-input-shed-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const sender = join(dir, 'udp-flood');
execFileSync('cc', ['-O2', '-o', sender, join(import.meta.dirname, '../helpers/udp-flood.c')]);

function busyWait(us: number): void {
  const until = performance.now() + us / 1000;
  while (performance.now() < until) {
    // the JS thread is what the test overloads
  }
}

t.test('a shed udp input is the highest order, and says so', async (t) => {
  const inputs: UdpInput[] = [];
  // The shed event: an input logs it at warn as it is shed (its status turns at the same call).
  let onShedLine: () => void = () => {};
  const firstShed = new Promise<void>((resolve) => {
    onShedLine = resolve;
  });
  const log = pino(
    { level: 'warn' },
    {
      write: (line: string) => {
        if (line.includes('shed:')) onShedLine();
      },
    },
  );
  // Opened highest order first: the order, not the age of the socket, must decide.
  for (const order of [...ORDERS].reverse()) {
    const port = await freePort();
    const ctx: InputContext = {
      ...inputContext(),
      log,
      streamName: `s${order}`,
      priority: order,
      onData: (b) => busyWait(b.length * SLOW_US_PER_BYTE),
    };
    const input = new UdpInput({ type: 'udp', address: '127.0.0.1', port }, ctx);
    input.start();
    t.teardown(() => input.close());
    inputs.unshift(input); // inputs[k] has ORDERS[k]
    const p = spawn(sender, [
      '-',
      '127.0.0.1',
      String(port),
      String(MBPS),
      String(SECONDS),
      '1000000000',
    ]);
    t.teardown(() => p.kill('SIGKILL'));
  }
  let bound: NodeJS.Timeout | undefined;
  await Promise.race([
    firstShed,
    new Promise<void>((resolve) => {
      bound = setTimeout(resolve, SECONDS * 1000); // the senders' whole run, at most
    }),
  ]);
  clearTimeout(bound);
  const seen = inputs.map((i) => i.status()['shed'] === true);
  t.ok(seen.some(Boolean), `an input was shed (${seen})`);
  t.notOk(seen[0], 'the order-0 stream is never the one shed');
  const last = seen.lastIndexOf(true);
  t.ok(
    seen.slice(last).every(Boolean) && last === seen.indexOf(true),
    `the shed ones are the highest orders (${seen})`,
  );
  const shed = inputs[last]!;
  t.match(shed.fault(), SHED_MESSAGE, 'its fault says why and what to do');
  t.match(shed.fault(), `(order ${ORDERS[last]})`, 'and names its order');
  t.equal(inputs[0]!.fault(), '', 'a kept input has no fault');
});
