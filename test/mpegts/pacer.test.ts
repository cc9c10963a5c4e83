// ConstantRatePacer on a ManualClock, checked on the bytes it hands out: the output carries the
// target rate within a packet at every tick, the queued bytes in order, null packets when the
// input is short, a backlog bounded at one second that keeps flowing at the rate, a new rate
// starting a new schedule, and drain / stop.
import t from 'tap';
import { ConstantRatePacer } from '../../src/mpegts/pacer.ts';
import { nullPacket, pid, TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { ManualClock } from '../../src/util/clock.ts';

/** The pacer's tick (pacer.ts TICK_MS). */
const TICK_MS = 5;
const NULL_PID = 0x1fff;
/** 188 000 B/s: 1000 packets a second, five a tick. */
const PKT_1000 = 1000 * TS_PACKET_SIZE * 8;

/** `n` content packets numbered from `first` (PID 0x100, the number in the payload). */
function content(n: number, first = 0): Buffer {
  const b = Buffer.alloc(n * TS_PACKET_SIZE);
  for (let i = 0; i < n; i++) {
    const o = i * TS_PACKET_SIZE;
    b[o] = 0x47;
    b[o + 1] = 0x01;
    b[o + 2] = 0x00;
    b[o + 3] = 0x10;
    b.writeUInt32BE(first + i, o + 4);
  }
  return b;
}

/** A pacer at `rate` (may change) on a ManualClock, with every output call kept. */
function pacer(rate: number | (() => number)) {
  const clock = new ManualClock();
  const calls: Buffer[] = [];
  const p = new ConstantRatePacer(clock, typeof rate === 'number' ? () => rate : rate, (b) =>
    calls.push(Buffer.from(b)),
  );
  const out = () => Buffer.concat(calls);
  return { clock, p, calls, out };
}

function packets(b: Buffer): Buffer[] {
  const r: Buffer[] = [];
  for (let o = 0; o < b.length; o += TS_PACKET_SIZE) r.push(b.subarray(o, o + TS_PACKET_SIZE));
  return r;
}
const nulls = (b: Buffer) => packets(b).filter((p) => pid(p) === NULL_PID).length;

t.test('the output carries the rate within a packet at every tick, content in order', async (t) => {
  // Rates whose bytes per tick are whole packets, fractions of packets, and under one packet.
  for (const rate of [PKT_1000, 1_000_000, 2_000_000, 38_000_000, 100_000]) {
    const { clock, p, calls, out } = pacer(rate);
    const bytesPerMs = rate / 8000;
    // 0.9 s of content: under the one-second bound, more than the 0.5 s the test runs.
    const n = Math.floor((bytesPerMs * 900) / TS_PACKET_SIZE);
    const input = content(n);
    // Pushed in uneven pieces, so the pacer has to cut inside them.
    for (let o = 0, k = 1; o < input.length; o += k * TS_PACKET_SIZE, k = (k % 7) + 1) {
      p.push(input.subarray(o, Math.min(input.length, o + k * TS_PACKET_SIZE)));
    }
    clock.advance(TICK_MS); // the first tick starts the schedule
    t.equal(calls.length, 0, `${rate} bit/s: nothing before the schedule starts`);
    let worst = 0;
    for (let k = 1; k <= 100; k++) {
      clock.advance(TICK_MS);
      const ideal = k * TICK_MS * bytesPerMs;
      const got = out().length;
      worst = Math.max(worst, ideal - got);
      if (got > ideal || ideal - got >= TS_PACKET_SIZE) {
        t.fail(`${rate} bit/s, tick ${k}: ${got} bytes out, ${ideal.toFixed(1)} due`);
        break;
      }
    }
    t.ok(
      worst < TS_PACKET_SIZE,
      `${rate} bit/s: at most ${worst.toFixed(1)} bytes behind, never ahead`,
    );
    t.equal(out().length % TS_PACKET_SIZE, 0, 'whole packets only');
    t.same(out(), input.subarray(0, out().length), 'the queued bytes, in order, nothing else');
    t.equal(nulls(out()), 0, 'no stuffing while content is queued');
    t.same(p.status(), { rate, stuffedPackets: 0, overrunBytes: 0 });
    p.stop();
  }
});

t.test('null packets fill in when the input is short', async (t) => {
  const { clock, p, out } = pacer(PKT_1000);
  clock.advance(TICK_MS);
  p.push(content(12));
  clock.advance(100); // 20 ticks: 100 packets due
  const got = packets(out());
  t.equal(got.length, 100, '100 ms at 1000 packets/s');
  t.same(Buffer.concat(got.slice(0, 12)), content(12), 'the content first');
  const NULL = nullPacket();
  t.ok(
    got.slice(12).every((q) => q.equals(NULL)),
    'then null packets, byte for byte',
  );
  t.equal(p.status()['stuffedPackets'], 88);

  p.push(content(3, 12));
  clock.advance(TICK_MS);
  t.same(
    packets(out())
      .slice(100)
      .map((q) => pid(q)),
    [0x100, 0x100, 0x100, NULL_PID, NULL_PID],
    'a tick with three packets queued: three plus two nulls',
  );
  t.same(packets(out())[100], content(1, 12), 'the new content right away');
  t.equal(p.status()['stuffedPackets'], 90);
});

t.test('nothing queued at all: a steady stream of null packets', async (t) => {
  const { clock, p, calls, out } = pacer(PKT_1000);
  clock.advance(TICK_MS + 1000);
  t.equal(out().length, 1000 * TS_PACKET_SIZE);
  t.equal(nulls(out()), 1000);
  t.equal(calls.length, 200, 'one output call a tick');
  t.equal(p.status()['stuffedPackets'], 1000);
});

t.test('a backlog over one second is sent at once down to one second', async (t) => {
  const { clock, p, out } = pacer(PKT_1000);
  p.push(content(2500)); // 2.5 s at the rate
  clock.advance(TICK_MS);
  t.equal(out().length, 1500 * TS_PACKET_SIZE, 'the excess over one second went out at once');
  t.same(out(), content(1500), 'in order');
  t.equal(p.status()['overrunBytes'], 1500 * TS_PACKET_SIZE);
  // The second left keeps flowing at the rate: every 100 ms carries 100 packets of it.
  for (let k = 1; k <= 10; k++) {
    clock.advance(100);
    const got = packets(out()).length;
    if (got !== 1500 + k * 100) {
      t.fail(`${k * 100} ms after the overrun: ${got - 1500} packets, ${k * 100} due`);
      break;
    }
  }
  t.same(out(), content(2500), 'the whole backlog, in order, no stuffing inside it');
  clock.advance(100);
  t.equal(packets(out()).length, 2600, 'the rate holds after the backlog is gone');
  t.equal(nulls(out()), 100, 'with null packets');
});

t.test('input above the rate: backlog bounded, and no gap when it slows down', async (t) => {
  const { clock, p, out } = pacer(PKT_1000);
  clock.advance(TICK_MS);
  // Two seconds of input at twice the rate, pushed each tick.
  let pushed = 0;
  for (let k = 0; k < 400; k++) {
    p.push(content(10, pushed));
    pushed += 10;
    clock.advance(TICK_MS);
    const backlog = pushed - packets(out()).length;
    if (backlog > 1000 + 10) {
      t.fail(`tick ${k}: ${backlog} packets queued, over one second of the rate`);
      break;
    }
  }
  t.ok((p.status()['overrunBytes'] as number) > 0, 'the overrun is counted');
  // The input drops to half the rate: the output must go on at the rate, from the backlog.
  for (let k = 0; k < 200; k++) {
    const before = packets(out()).length;
    p.push(content(2, pushed));
    pushed += 2;
    clock.advance(TICK_MS);
    const sent = packets(out()).length - before;
    if (sent !== 5) {
      t.fail(`${k * TICK_MS} ms after the input slowed: ${sent} packets in a tick, 5 due`);
      break;
    }
  }
  t.same(out(), content(packets(out()).length), 'every byte in order, no stuffing in between');
});

t.test('a new rate starts a new schedule', async (t) => {
  let rate = PKT_1000;
  const { clock, p, out } = pacer(() => rate);
  p.push(content(900));
  clock.advance(TICK_MS + 100);
  t.equal(packets(out()).length, 100);
  rate = 2 * PKT_1000;
  clock.advance(TICK_MS); // this tick restarts the schedule at the new rate
  t.equal(packets(out()).length, 100, 'nothing due at the tick the rate changed');
  t.equal(p.status()['rate'], 2 * PKT_1000);
  clock.advance(100);
  t.equal(packets(out()).length, 300, '100 ms at 2000 packets/s');
});

t.test('no rate (0): each tick passes the queue through unpaced, no stuffing', async (t) => {
  const { clock, p, calls } = pacer(0);
  const a = content(3);
  const b = content(500, 3);
  p.push(a);
  p.push(b);
  clock.advance(TICK_MS);
  t.equal(calls.length, 2, 'as pushed');
  t.same(Buffer.concat(calls), Buffer.concat([a, b]));
  clock.advance(100);
  t.equal(calls.length, 2, 'no null packets without a rate');
  t.same(p.status(), { rate: 0, stuffedPackets: 0, overrunBytes: 0 });
});

t.test('drain sends the queue at once; stop silences the pacer for good', async (t) => {
  const { clock, p, out } = pacer(PKT_1000);
  p.push(content(50));
  clock.advance(TICK_MS + 10); // 10 packets paced
  p.drain();
  t.same(out(), content(50), 'the rest at once, in order');
  p.push(content(5, 50));
  p.stop();
  const n = out().length;
  clock.advance(1000);
  t.equal(out().length, n, 'nothing after stop, not even what was queued');
  p.drain();
  t.equal(out().length, n, 'stop emptied the queue');
});
