// A fresh stream reads P1 0: the wait of a starting encoder (the test generator's ffmpeg sends its
// first PAT, PMT and frame, then nothing while x264 warms up) is the input's silence, not a PAT
// or PMT missing from a flowing stream. Tables missing while packets flow still count.
import t from 'tap';
import { TsAnalyzer } from '../../../src/native/ts.ts';
import { startServer, waitFor } from '../../helpers/server.ts';
import { cleanStream } from '../../helpers/ts-craft.ts';

/** The stream's packets at the times a warming-up encoder delivers them: the first tick at
 *  once, the rest `stallMs` late (the first ticks after the stall carry no PAT or PMT). */
function delivered(stallMs: number, ms: number, keep?: (pid: number, at: number) => boolean) {
  const a = new TsAnalyzer();
  for (const tick of cleanStream({ ms, ...(keep ? { keep } : {}) })) {
    a.push(Buffer.concat(tick.packets), tick.t === 0 ? 0 : tick.t + stallMs);
  }
  return a.stats();
}

t.test('an encoder warming up after its first packets raises no P1 indicator', async (t) => {
  const s = delivered(800, 3000);
  t.equal(s.tr101290.patError, 0, 'no PAT_error for the start-up wait');
  t.equal(s.tr101290.pmtError, 0, 'no PMT_error for the start-up wait');
  t.equal(s.priority1, 0);
});

t.test('a silent input counts no table errors when it comes back', async (t) => {
  // Nothing at all arrives from 1000 to 6010 ms (longer than the 5 s PID limit); the first
  // packets back carry no PAT or PMT.
  const a = new TsAnalyzer();
  for (const tick of cleanStream({ ms: 8000 })) {
    if (tick.t < 1000 || tick.t >= 6010) a.push(Buffer.concat(tick.packets), tick.t);
  }
  // (The packets lost meanwhile are Continuity_count_errors: that count is true.)
  const tr = a.stats().tr101290;
  t.same(
    { pat: tr.patError, pmt: tr.pmtError, pid: tr.pidError },
    { pat: 0, pmt: 0, pid: 0 },
    'the outage is the input state, not PAT, PMT or PID errors',
  );
});

t.test('PAT and PMT missing while the other packets flow still count', async (t) => {
  const s = delivered(
    800,
    4000,
    (pid, at) => !((pid === 0 || pid === 0x100) && at > 1200 && at < 2800),
  );
  t.equal(s.tr101290.patError, 3, 'PAT absent 1.6 s: 3 periods of 0.5 s');
  t.equal(s.tr101290.pmtError, 3, 'PMT absent 1.6 s');
});

t.test('a fresh test-generator stream reads P1 0 after its start', async (t) => {
  const srv = await startServer(t, {
    config: {
      stream: [
        {
          id: 1,
          'stream-name': 'fresh',
          pause: false,
          input: [{ type: 'test', width: 320, height: 180, 'frame-rate': 25 }],
        },
      ],
    },
  });
  type Input = { packets?: number; priority1: number; tr101290: object };
  const read = async () =>
    (await (await fetch(`${srv.url}/data/stream/1`)).json()) as {
      state: string;
      inputs: Input[];
    };
  // Past the encoder's start and many PAT periods: 2,000 packets (~3 s at this size).
  await waitFor(
    'the stream running with 2,000 packets',
    async () => {
      const s = await read();
      return s.state === 'running' && (s.inputs[0]?.packets ?? 0) >= 2000 ? true : undefined;
    },
    30_000,
  );
  const s = await read();
  t.equal(s.inputs[0]!.priority1, 0, `input P1 0: ${JSON.stringify(s.inputs[0]!.tr101290)}`);
});
