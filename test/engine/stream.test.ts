// The stream engine on its own: no config record, no reconciler, no sockets. Inputs are fakes
// the test feeds; time is the manual clock. What the engine decides (state, switches, the
// splice, the status) is checked here; the driver's reading of records is in
// test/drivers/stream-settings.test.ts and the whole path with real peers in test/stream/.
import t from 'tap';
import type { InputContext } from '../../src/engine/input.ts';
import { RATE_WINDOW_MS } from '../../src/engine/input-runner.ts';
import type { StreamOutput } from '../../src/engine/output.ts';
import { StreamEngine, type StreamSettings } from '../../src/engine/stream.ts';
import { silentLogger } from '../../src/log.ts';
import { TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { buildPat, buildPmt, sectionPackets } from '../../src/mpegts/psi.ts';
import { ManualClock } from '../../src/util/clock.ts';

const PMT_PID = 0x100;
const VIDEO_PID = 0x101;

/** One valid chunk of TS: PAT, PMT and a few video packets, CC counting from `cc`. */
function chunk(cc: number): Buffer {
  const pat = sectionPackets(
    buildPat({
      transportStreamId: 1,
      version: 0,
      currentNext: true,
      programs: [{ programNumber: 1, pid: PMT_PID }],
    }),
    0,
    cc,
  );
  const pmt = sectionPackets(
    buildPmt({
      programNumber: 1,
      version: 0,
      currentNext: true,
      pcrPid: VIDEO_PID,
      programInfo: Buffer.alloc(0),
      streams: [{ streamType: 0x1b, pid: VIDEO_PID, descriptors: Buffer.alloc(0) }],
    }),
    PMT_PID,
    cc,
  );
  const video = Buffer.alloc(4 * TS_PACKET_SIZE, 0xff);
  for (let i = 0; i < 4; i++) {
    const o = i * TS_PACKET_SIZE;
    video[o] = 0x47;
    video[o + 1] = VIDEO_PID >> 8;
    video[o + 2] = VIDEO_PID & 0xff;
    video[o + 3] = 0x10 | ((cc * 4 + i) & 0x0f);
  }
  return Buffer.concat([pat, pmt, video]);
}

function settings(over: Partial<StreamSettings> = {}): StreamSettings {
  return {
    name: 'unit',
    inputs: [{ type: 'fake' }, { type: 'fake' }],
    outputs: [],
    streamTimeoutMs: 1000,
    errorRate: 0,
    errorWindowMs: 10_000,
    checkIntervalMs: 5000,
    fallbackCheck: true,
    bitrateMode: 0,
    fixedRateKbps: 0,
    epgExport: false,
    scrambledChannel: false,
    enableAlert: true,
    alertDelayMs: 0,
    trace: false,
    ...over,
  };
}

/** An engine whose inputs the test drives: `open[i]` is input i's context while it is open. */
function engine(over: Partial<StreamSettings> = {}) {
  const clock = new ManualClock(0);
  const open: (InputContext | null)[] = [];
  const outputs: { cfg: Record<string, unknown>; got: number; closed: boolean }[] = [];
  const e = new StreamEngine(settings(over), {
    log: silentLogger,
    clock,
    dataDir: '/nonexistent',
    inputFactories: {
      fake: (_cfg, ctx) => ({
        start: () => {
          open[ctx.index] = ctx;
        },
        close: async () => {
          open[ctx.index] = null;
        },
        status: () => ({}),
      }),
    },
    outputFactories: {
      count: (cfg): StreamOutput => {
        const o = { cfg, got: 0, closed: false };
        outputs.push(o);
        return {
          start: async () => {},
          close: async () => {
            o.closed = true;
          },
          status: () => ({ got: o.got }),
          packets: (b: Buffer) => {
            o.got += b.length;
          },
        };
      },
    },
    bus: () => undefined,
    eitSink: () => undefined,
  });
  let cc = 0;
  /** Feed input `i` for `ms` of manual time, one chunk every 50 ms. */
  const feed = (i: number, ms: number) => {
    for (let at = 0; at < ms; at += 50) {
      open[i]?.onData(chunk(cc++), true);
      clock.advance(50);
    }
  };
  return { e, clock, open, outputs, feed };
}

t.test(
  'the primary runs; silence past stream-timeout switches to the backup, spliced',
  async (t) => {
    const { e, clock, open, feed } = engine();
    let received = 0;
    const discontinuities: string[] = [];
    e.hub.subscribe({
      packets: (b: Buffer) => {
        received += b.length;
      },
      discontinuity: (why: string) => {
        discontinuities.push(why);
      },
    });
    await e.start();
    t.equal(e.state(), 'starting');
    t.ok(open[0], 'the primary is open');
    t.notOk(open[1], 'the backup waits');
    feed(0, 500);
    t.equal(e.state(), 'running');
    t.ok(received > 0, 'output reached the bus');
    clock.advance(1500); // the primary falls silent
    t.equal(e.status().activeInput, 1, 'switched to the backup');
    t.ok(open[1], 'the backup was opened');
    const sw = e.status().switches;
    t.equal(sw.length, 1);
    t.match(sw[0]!.reason, /no valid TS/);
    t.equal(sw[0]!.firstPacketMs, undefined, 'nothing out of the backup yet');
    feed(1, 500);
    t.equal(e.state(), 'running', 'running on the backup');
    t.type(e.status().switches[0]!.firstPacketMs, 'number', 'the first packet out is timed');
    t.equal(discontinuities.length, 1, 'the switch reached the bus as one splice');
    t.ok(
      e.status().alerts.some((a) => a.key === 'backup-active' && a.raised),
      'running on a backup raises its alert',
    );
    await e.stop();
    t.equal(e.state(), 'paused');
    t.notOk(open[0] ?? open[1], 'every input closed at stop');
  },
);

t.test('settings replaced at run time are read at the next use (a hot change)', async (t) => {
  const { e, clock, feed } = engine();
  await e.start();
  feed(0, 500);
  e.settings = { ...e.settings, streamTimeoutMs: 10_000 };
  clock.advance(1500);
  t.equal(e.status().activeInput, 0, 'the longer timeout keeps the primary');
  t.equal(e.state(), 'running');
  await e.stop();
});

t.test('outputs come from the factories; an unknown type is reported, not thrown', async (t) => {
  const { e, outputs, feed } = engine({
    inputs: [{ type: 'fake' }],
    outputs: [{ type: 'count' }, { type: 'carrier-pigeon' }],
  });
  await e.start();
  feed(0, 200);
  t.equal(outputs.length, 1);
  t.ok(outputs[0]!.got > 0, 'the output got the stream');
  const st = e.status().outputs;
  t.equal(st[1]!['state'], 'error');
  t.match(String(st[1]!['message']), /carrier-pigeon: not supported yet/);
  e.settings = { ...e.settings, outputs: [{ type: 'count', n: 2 }] };
  await e.restartOutput(0);
  await e.restartOutput(1);
  t.ok(outputs[0]!.closed, 'the old output was closed');
  t.equal(outputs.length, 2, 'one new output started');
  t.equal(e.status().outputs.length, 1);
  await e.stop();
  t.ok(outputs[1]!.closed);
});

t.test(
  'inputs learn whether the consumers want packets evenly spread (InputContext.smooth)',
  async (t) => {
    const { e, open, outputs } = engine({ inputs: [{ type: 'fake' }], outputs: [] });
    await e.start();
    const ctx = open[0]!;
    t.equal(ctx.smooth?.(), false, 'no consumer: bursts are fine');
    const offHttp = e.hub.subscribe({ acceptsBursts: true, packets: () => {} });
    t.equal(ctx.smooth?.(), false, 'only sinks that take bursts (HTTP clients, the packager)');
    const offPlain = e.hub.subscribe({ packets: () => {} });
    t.equal(ctx.smooth?.(), true, 'a sink that passes packets on as they come (another stream)');
    offPlain();
    t.equal(ctx.smooth?.(), false, 'and back when it leaves');
    e.settings = { ...e.settings, outputs: [{ type: 'count' }] };
    await e.restartOutput(0);
    t.equal(outputs.length, 1);
    t.equal(ctx.smooth?.(), true, 'a push output (UDP, SRT …) wants them spread');
    offHttp();
    await e.stop();
  },
);

t.test('a probed backup is never asked to keep its packets spread', async (t) => {
  const { e, open, clock, feed } = engine({ outputs: [{ type: 'count' }] });
  await e.start();
  feed(0, 500);
  t.equal(open[0]!.smooth?.(), true, 'the active input feeds the output');
  clock.advance(1500); // the primary falls silent: the backup becomes active
  t.equal(e.status().activeInput, 1);
  t.equal(open[1]!.smooth?.(), true);
  feed(1, 5500); // the backup runs; check-interval passes: the primary is probed
  t.equal(e.status().activeInput, 1);
  t.ok(open[0], 'the primary is open as a probe');
  t.equal(open[0]!.smooth?.(), false, 'its packets go no further than its analysis');
  await e.stop();
});

t.test('no input of a supported type: state error with the reason', async (t) => {
  const { e } = engine({ inputs: [{ type: 'srt' }] });
  await e.start();
  t.equal(e.state(), 'error');
  t.equal(e.status().message, 'no input of a supported type');
  await e.stop();
});

t.test('the switch is decided at the silence deadline, not at the next tick', async (t) => {
  const { e, clock, feed } = engine();
  await e.start();
  feed(0, 500); // the last chunk arrives at 450 ms; ticks run at 250, 500, 750 …
  const lastData = 450;
  // stream-timeout 1000 ms: the input is dead from 1451 ms. The tick at 1250 sees it coming;
  // the next tick (1500) would be 49 ms late.
  clock.advance(1460 - clock.monotonic());
  t.equal(e.status().activeInput, 1, 'switched before the 1500 ms tick');
  const sw = e.status().switches[0]!;
  t.equal(Date.parse(sw.at) - clock.now() + clock.monotonic(), lastData + 1000 + 1);
  await e.stop();
});

t.test('a single dead input: the passed deadline does not re-arm (no spin)', async (t) => {
  const { e, clock } = engine({ inputs: [{ type: 'fake' }] });
  await e.start();
  clock.advance(5000); // would never return if the deadline timer re-armed itself at 0 ms
  t.equal(e.state(), 'no-signal');
  t.equal(e.status().switches.length, 0, 'one input: nowhere to go');
  await e.stop();
});

t.test('reportFault (the alerter) goes through the stream gate: alert-delay applies', async (t) => {
  const { e, clock } = engine({ alertDelayMs: 3000 });
  e.reportFault('tr101290-p1', true, 'p1 errors');
  t.same(e.alertList(), [], 'ignored while stopped');
  await e.start();
  e.reportFault('tr101290-p1', true, 'p1 errors');
  clock.advance(2000);
  e.reportFault('tr101290-p1', true, 'p1 errors');
  t.match(e.alertList(), [{ key: 'tr101290-p1', raised: false }], 'held by alert-delay');
  clock.advance(1000);
  e.reportFault('tr101290-p1', true, 'p1 errors');
  t.ok(
    e.alertList().some((a) => a.key === 'tr101290-p1' && a.raised),
    'raised after the delay, listed with the engine alerts',
  );
  e.settings = { ...e.settings, enableAlert: false };
  e.applyAlerts();
  t.same(e.alertList(), [], 'enable-alert off hides it');
  await e.stop();
});

t.test('a dead input reads 0 bit/s within the rate window, in status and metrics', async (t) => {
  const { e, clock, feed } = engine({ inputs: [{ type: 'fake' }] });
  await e.start();
  feed(0, 2000);
  t.ok(e.status().bitrateIn > 0, `a live input has a rate (${e.status().bitrateIn})`);
  t.ok((e.status().inputs[0]!['bitrate'] as number) > 0, 'and so has its input');
  // The publisher dies: no byte from here on. Past the window (and the analyzer's sampling)
  // every figure of the input's rate is 0, and stays 0.
  clock.advance(RATE_WINDOW_MS + 250);
  t.equal(e.status().bitrateIn, 0, 'status: stream bitrate-in 0');
  t.equal(e.status().inputs[0]!['bitrate'], 0, 'status: the input 0');
  t.equal(e.metrics().bitrateIn, 0, 'metrics (the dashboard row): 0');
  t.equal(e.metrics().bitrateOut, 0, 'nothing goes out either');
  clock.advance(40_000);
  t.equal(e.status().bitrateIn, 0, '40 s on: still 0');
  t.equal(e.state(), 'no-signal');
  feed(0, 1000);
  t.ok(e.status().bitrateIn > 0, 'bytes again: a rate again');
  await e.stop();
});
