// Shedding by priority: six receivers at 8 Mbit/s each while onData holds the JS thread long
// enough that it carries about 4 of them. The most important ones lose nothing, the loss lands
// whole on the least important ones; when the load drops they come back, most important first.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { UdpReceiver } from '../../src/native/udp.ts';

const RECEIVERS = 6;
const MBPS = 8;
/** Wall-clock cost of one byte in onData while slow: the JS thread carries 4 MB/s, so the two
 *  kept receivers use half of it (headroom for a loaded machine). */
const SLOW_US_PER_BYTE = 0.25;
/** The overload lasts this long; the senders of the two most important receivers stop then. */
const OVERLOAD_S = 6;
/** The others keep sending (at most this long) until every shed one is back. */
const TAIL_S = 24;
const WAIT_MS = 20_000;

const dir = mkdtempSync(join(tmpdir(), 'sluice-udpshed-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const sender = join(dir, 'udp-flood');
execFileSync('cc', ['-O2', '-o', sender, join(import.meta.dirname, '../helpers/udp-flood.c')]);

interface Rx {
  r: UdpReceiver;
  delivered: number; // datagrams handed to onData
  events: ('on' | 'off')[];
  dataWhileShed: number; // datagrams handed over between a shed and its re-admission
  shed: boolean;
}

function busyWait(us: number): void {
  const until = performance.now() + us / 1000;
  while (performance.now() < until) {
    // the JS thread is the bottleneck under test
  }
}

function send(port: number, seconds: number): { p: ChildProcess; sent: Promise<number> } {
  const p = spawn(sender, [
    '-',
    '127.0.0.1',
    String(port),
    String(MBPS),
    String(seconds),
    '1000000000',
  ]);
  t.teardown(() => p.kill('SIGKILL'));
  let out = '';
  p.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const sent = new Promise<number>((resolve) => p.once('exit', () => resolve(Number(out.trim()))));
  return { p, sent };
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 20));
  }
}

t.test('an overloaded JS thread sheds whole sockets, least important first', async (t) => {
  let slow = true;
  const rxs: Rx[] = [];
  for (let i = 0; i < RECEIVERS; i++) {
    const rx = { delivered: 0, events: [], dataWhileShed: 0, shed: false } as unknown as Rx;
    rx.r = new UdpReceiver({
      port: 0,
      address: '127.0.0.1',
      // Opened least important first: the priority, not the age, must decide.
      priority: RECEIVERS - 1 - i,
      queueBytes: 2 << 20, // 2 s of a stream: today's spread loss shows within the overload
      batchLatencyMs: 20, // as the udp input: fewer, larger batches (less per-batch cost)
      onData: (batch, n) => {
        rx.delivered += n;
        if (rx.shed) rx.dataWhileShed += n;
        if (slow) busyWait(batch.length * SLOW_US_PER_BYTE);
      },
      onShed: (shed) => {
        rx.shed = shed;
        rx.events.push(shed ? 'on' : 'off');
      },
    });
    t.teardown(() => rx.r.close());
    rxs.unshift(rx); // rxs[k] has priority k
  }
  const rx = (k: number): Rx => rxs[k] as Rx; // rx(k) has priority k
  const kept = [0, 1].map((k) => send(rx(k).r.port, OVERLOAD_S));
  const others = rxs.slice(2).map((rx) => send(rx.r.port, TAIL_S));

  const counts = await Promise.all(kept.map((s) => s.sent));
  const sent = (k: number): number => counts[k] as number;
  // Every datagram sent handed over, or the receiver lost some (counted) and all it read is
  // through (its last batch may still be open after the thread read the last datagram).
  const done = (k: number) => {
    const s = rx(k).r.stats();
    if (rx(k).delivered >= sent(k)) return true;
    const lost = s.drops + s.queueDrops + s.shedBatches > 0;
    return lost && s.datagrams + s.drops >= sent(k) && s.queued === 0;
  };
  await until('the kept receivers to be drained', () => done(0) && done(1));
  for (const k of [0, 1]) {
    const s = rx(k).r.stats();
    t.equal(rx(k).delivered, sent(k), `priority ${k}: all ${sent(k)} datagrams delivered`);
    t.same(
      { drops: s.drops, queueDrops: s.queueDrops, shedBatches: s.shedBatches },
      { drops: 0, queueDrops: 0, shedBatches: 0 },
      `priority ${k}: no loss of any kind`,
    );
    t.same(rx(k).events, [], `priority ${k}: never shed`);
  }
  const shed = rxs.map((x, k) => (x.events.length > 0 ? k : -1)).filter((k) => k >= 0);
  t.ok(shed.length >= 2, `JS carries about 4 streams: ${shed.length} shed (${shed})`);
  t.same(
    shed,
    shed.length ? [...Array(shed.length).keys()].map((i) => RECEIVERS - shed.length + i) : [],
    'the shed ones are the least important',
  );
  for (const k of shed) {
    const s = rx(k).r.stats();
    t.ok(s.shedBatches > 0 && s.shedBytes > 0, `priority ${k}: ${s.shedBatches} batches shed`);
  }
  for (const [k, x] of rxs.entries()) {
    const s = x.r.stats();
    t.same(
      { drops: s.drops, queueDrops: s.queueDrops },
      { drops: 0, queueDrops: 0 },
      `priority ${k}: no loss but shedding (not spread over the queues)`,
    );
  }

  // The load drops: the shed ones come back one at a time, the most important first.
  slow = false;
  const back: number[] = [];
  await until('every shed receiver re-admitted', () => {
    for (const k of shed) if (!rx(k).shed && !back.includes(k)) back.push(k);
    return back.length === shed.length;
  });
  t.same(back, shed, 're-admitted in priority order');
  for (const k of shed) {
    t.equal(rx(k).dataWhileShed, 0, `priority ${k}: nothing delivered while shed`);
    t.equal(rx(k).r.stats().shed, false, `priority ${k}: stats say admitted`);
  }
  if (shed.length > 0) {
    const last = shed[shed.length - 1] as number;
    const before = rx(last).delivered;
    await until('data again on the last re-admitted', () => rx(last).delivered > before);
  }
  for (const o of others) o.p.kill('SIGKILL');
});

t.test('priority and onShed are checked', async (t) => {
  const base = { port: 0, address: '127.0.0.1', onData: () => {} };
  t.throws(() => new UdpReceiver({ ...base, priority: 1.5 }), /priority must be an integer/);
  t.throws(
    () => new UdpReceiver({ ...base, onShed: 1 as unknown as () => void }),
    /onShed must be a function/,
  );
  const r = new UdpReceiver({ ...base, priority: -3 });
  t.teardown(() => r.close());
  r.setPriority(7);
  t.throws(() => r.setPriority(2 ** 40), /priority must be an integer/);
  t.equal(r.stats().shed, false);
});
