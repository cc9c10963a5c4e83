// The receive low-water policy of the TCP pull inputs (src/inputs/recv-low-water.ts), on a
// hand-driven clock with the system call replaced: the mark follows the measured rate, a socket
// not read for RELEASE_MS is released (mark 1) and raised again at its next read, a quiet or
// slow socket keeps mark 1, a socket whose fd is gone is never touched.
import t from 'tap';
import {
  HOLD_MS,
  MAX_MARK,
  RELEASE_MS,
  RecvLowWater,
  TICK_MS,
} from '../../src/inputs/recv-low-water.ts';
import { ManualClock } from '../../src/util/clock.ts';

function setUp() {
  const clock = new ManualClock();
  const calls: [number, number][] = [];
  const r = new RecvLowWater(clock, (fd, bytes) => calls.push([fd, bytes]));
  return { clock, calls, r };
}

/** `bytesPerMs` read by `s` in reads every `everyMs` for `ms`. */
function feed(
  clock: ManualClock,
  s: { read(n: number): void },
  bytesPerMs: number,
  everyMs: number,
  ms: number,
): void {
  for (let at = 0; at < ms; at += everyMs) {
    clock.advance(everyMs);
    s.read(bytesPerMs * everyMs);
  }
}

t.test('the mark follows the rate: HOLD_MS of bytes', async (t) => {
  const { clock, calls, r } = setUp();
  const s = r.addFd(() => 7);
  feed(clock, s, 300, 10, 2000); // 300 bytes a ms, read every 10 ms
  const last = calls.at(-1)!;
  t.equal(last[0], 7);
  t.ok(
    Math.abs(last[1] - 300 * HOLD_MS) <= 300 * HOLD_MS * 0.25,
    `mark ${last[1]} near ${300 * HOLD_MS}`,
  );
  t.ok(calls.length <= 6, `a steady rate sets few marks (${calls.length})`);
  t.equal(r.counters.releases, 0, 'reads within RELEASE_MS: never released');
});

t.test('no read for RELEASE_MS: released, raised again at the next read', async (t) => {
  const { clock, calls, r } = setUp();
  const s = r.addFd(() => 7);
  feed(clock, s, 300, 10, 1000);
  const mark = calls.at(-1)![1];
  t.ok(mark > 1, 'a mark is set');
  calls.length = 0;
  clock.advance(RELEASE_MS + TICK_MS);
  t.same(calls, [[7, 1]], 'released within RELEASE_MS + TICK_MS');
  t.equal(r.counters.releases, 1);
  clock.advance(10 * TICK_MS);
  t.same(calls, [[7, 1]], 'a quiet socket stays released');
  s.read(500);
  t.same(
    calls,
    [
      [7, 1],
      [7, mark],
    ],
    'its next read raises the mark again',
  );
});

t.test('a slow socket keeps mark 1; marks are capped', async (t) => {
  const { clock, calls, r } = setUp();
  const slow = r.addFd(() => 3);
  feed(clock, slow, 10, 20, 2000); // 10 bytes a ms: 250 bytes per HOLD_MS
  t.same(calls, [], 'no system call for a slow socket');
  const fast = r.addFd(() => 4);
  feed(clock, fast, 100_000, 10, 2000); // 800 Mbit/s
  t.equal(calls.at(-1)![1], MAX_MARK, 'capped');
});

t.test('a removed socket or one without an fd is not touched; the tick stops', async (t) => {
  const { clock, calls, r } = setUp();
  let fd = 9;
  const s = r.addFd(() => fd);
  feed(clock, s, 300, 10, 1000);
  const n = calls.length;
  fd = -1; // destroyed before its owner removed it
  clock.advance(RELEASE_MS + TICK_MS);
  t.equal(calls.length, n, 'no call on a closed fd');
  const s2 = r.addFd(() => 10);
  s2.remove();
  s2.remove();
  feed(clock, s2, 300, 10, 1000);
  t.equal(calls.length, n, 'removed: no call');
});
