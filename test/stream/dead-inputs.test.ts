// A stream whose inputs all deliver nothing: it goes to no-signal and tries the inputs in turn,
// each getting `stream-timeout` to prove itself — one logged switch per attempt, no flood of
// "input switch" lines every tick; the no-signal alert waits for `alert-delay`.
// Time is a ManualClock; the inputs are real UDP sockets nobody sends to.
import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { freePort, makeHost, streamResource, tempDir } from '../helpers/stream-host.ts';

interface LogLine {
  msg: string;
  from?: number;
  to?: number;
  alert?: string;
}

function capturingHost(dir: string) {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  const clock = new ManualClock();
  const host = { ...makeHost(dir), clock, log: pino({ level: 'info' }, sink) };
  return { host, clock, lines };
}

/** Advance the manual clock in tick-sized steps (the instance ticks every 250 ms). */
function run(clock: ManualClock, ms: number): void {
  for (let done = 0; done < ms; done += 250) clock.advance(250);
}

t.test(
  'two dead inputs: no-signal, one switch per stream-timeout, alert after the delay',
  async (t) => {
    const dir = tempDir(t);
    const { host, clock, lines } = capturingHost(dir);
    const [p1, p2] = [await freePort(), await freePort()];
    const s = (await new StreamDriver().create(
      streamResource({
        'stream-name': 'dead',
        'stream-timeout': 2_000_000,
        'alert-delay': 5,
        input: [
          { type: 'udp', port: p1 },
          { type: 'udp', port: p2 },
        ],
      }),
      host,
    )) as StreamInstance;
    t.teardown(() => s.close());

    t.equal(s.state(), 'starting');
    run(clock, 20_000);
    await new Promise((r) => setImmediate(r)); // let pino's sink flush
    t.equal(s.state(), 'no-signal', 'no-signal once no input delivered for stream-timeout');
    const switches = lines.filter((l) => l.msg === 'input switch');
    // 20 s with a 2 s timeout: at most one attempt per 2 s (10), and each input was tried.
    t.ok(switches.length >= 8 && switches.length <= 10, `${switches.length} switches in 20 s`);
    const log = s.status()['switches'] as { from: number; to: number; at: string }[];
    t.equal(log.length, switches.length, 'switch log matches the logged switches');
    const gaps = log.slice(1).map((e, i) => Date.parse(e.at) - Date.parse(log[i]!.at));
    t.ok(
      gaps.every((g) => g >= 2000),
      `each input had the whole stream-timeout (gaps ${gaps.join(', ')} ms)`,
    );
    t.ok(
      switches.some((l) => l.to === 0) && switches.some((l) => l.to === 1),
      'both inputs were tried',
    );
    t.match(
      (s.status()['switches'] as { reason: string }[])[0]!.reason,
      /^no valid TS for 2 s \(no PAT\)$/,
      'the reason says what was missing',
    );
    const raised = lines.filter((l) => l.alert === 'no-signal');
    t.equal(raised.length, 1, 'the no-signal alert is raised once');
    const alerts = s.status()['alerts'] as { key: string; raised: boolean }[];
    t.ok(
      alerts.some((a) => a.key === 'no-signal' && a.raised),
      'no-signal alert listed',
    );
  },
);

t.test('no-signal alert waits for alert-delay', async (t) => {
  const dir = tempDir(t);
  const { host, clock, lines } = capturingHost(dir);
  const p1 = await freePort();
  const s = (await new StreamDriver().create(
    streamResource({
      'stream-name': 'dead1',
      'stream-timeout': 1_000_000,
      'alert-delay': 10,
      input: [{ type: 'udp', port: p1 }],
    }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());
  run(clock, 6000);
  t.equal(s.state(), 'no-signal');
  t.equal(lines.filter((l) => l.alert === 'no-signal').length, 0, 'not raised before the delay');
  t.equal(lines.filter((l) => l.msg === 'input switch').length, 0, 'one input: no switch at all');
  run(clock, 6000);
  await new Promise((r) => setImmediate(r));
  t.equal(lines.filter((l) => l.alert === 'no-signal').length, 1, 'raised after the delay');
});
