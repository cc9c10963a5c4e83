// Timing of the test generator's output against TR 101 290 PTS_error (a PTS on every audio and
// video PID at least every 700 ms): the real ffmpeg generator, small picture, with MP2 and with
// AAC (the example config's choice); consecutive PTS of each PID must lie well inside the
// limit, so that arrival jitter (a busy event loop at start-up) cannot push two past 700 ms;
// and a test stream in the real server reports ptsError 0 after a few seconds.
import { spawn } from 'node:child_process';
import t from 'tap';
import { testGeneratorArgs } from '../../src/inputs/test/args.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import { DEFAULT_FFMPEG_PATH as FFMPEG } from '../../src/util/ffmpeg.ts';
import { startServer, waitFor } from '../helpers/server.ts';

const SMALL = { width: 320, height: 180, 'video-bitrate': 300 };
const RUN_MS = 3000;
/** Largest PTS step allowed between PES of one PID: a fifth of the 700 ms limit. */
const PTS_STEP_LIMIT_MS = 140;
const VIDEO_PID = 33;
const AUDIO_PID = 34;
const STREAM_SECONDS = 4;

interface Capture {
  /** PTS (ms) of every PES start carrying one, per PID, in stream order. */
  pts: Map<number, number[]>;
  /** Arrival time (ms since spawn) and bytes of each read. */
  reads: { at: number; buf: Buffer }[];
}

function ptsOf(p: Buffer): number | undefined {
  let h = 4;
  if (p[3]! & 0x20) h += 1 + p[4]!;
  if (h + 14 > p.length || p[h] !== 0 || p[h + 1] !== 0 || p[h + 2] !== 1) return;
  if (!(p[h + 7]! & 0x80)) return;
  const b = p.subarray(h + 9, h + 14);
  const ticks =
    (b[0]! & 0x0e) * 2 ** 29 + b[1]! * 2 ** 22 + (b[2]! >> 1) * 2 ** 15 + b[3]! * 2 ** 7;
  return (ticks + (b[4]! >> 1)) / 90;
}

/** Run the generator for RUN_MS and collect its output. */
function capture(cfg: Record<string, unknown>): Promise<Capture> {
  const child = spawn(FFMPEG, testGeneratorArgs(cfg, 'timing'), {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const t0 = performance.now();
  const reads: Capture['reads'] = [];
  child.stdout.on('data', (buf: Buffer) => reads.push({ at: performance.now() - t0, buf }));
  const stop = setTimeout(() => child.kill('SIGKILL'), RUN_MS);
  return new Promise((resolve) => {
    child.on('close', () => {
      clearTimeout(stop);
      const all = Buffer.concat(reads.map((r) => r.buf));
      const pts = new Map<number, number[]>();
      for (let o = 0; o + 188 <= all.length; o += 188) {
        const p = all.subarray(o, o + 188);
        if (p[0] !== 0x47 || !(p[1]! & 0x40)) continue;
        const pid = ((p[1]! & 0x1f) << 8) | p[2]!;
        const v = ptsOf(p);
        if (v !== undefined) pts.set(pid, [...(pts.get(pid) ?? []), v]);
      }
      resolve({ pts, reads });
    });
  });
}

for (const [name, audioEnc] of [
  ['MP2', 0],
  ['AAC', 1],
] as const) {
  t.test(`generator with ${name}: a PTS on every PID well within 700 ms`, async (t) => {
    const cap = await capture({ ...SMALL, 'audio-enc': audioEnc });
    for (const pid of [VIDEO_PID, AUDIO_PID]) {
      const list = cap.pts.get(pid) ?? [];
      t.ok(list.length > 10, `PID ${pid}: ${list.length} PES with a PTS`);
      let step = 0;
      for (let i = 1; i < list.length; i++) step = Math.max(step, list[i]! - list[i - 1]!);
      t.ok(
        step <= PTS_STEP_LIMIT_MS,
        `PID ${pid}: largest PTS step ${step.toFixed(0)} ms ≤ ${PTS_STEP_LIMIT_MS}`,
      );
    }
    // The native analyzer on the arrival times of the reads.
    const a = new TsAnalyzer({ tr101290: true, psiPids: 'all' });
    for (const r of cap.reads) a.push(r.buf, r.at);
    t.equal(a.stats().tr101290.ptsError, 0, 'analyzer: no PTS_error');
  });
}

t.test('a test stream in the server reports ptsError 0 after a few seconds', async (t) => {
  const srv = await startServer(t, {
    config: {
      stream: [
        {
          id: 1,
          'stream-name': 'gen',
          pause: false,
          input: [{ type: 'test', ...SMALL, 'audio-enc': 1 }],
        },
      ],
    },
  });
  type Input = { bitrate?: number; packets?: number; tr101290?: { ptsError: number } };
  const input = async (): Promise<Input | undefined> => {
    const r = await fetch(`${srv.url}/data/stream/1`);
    if (!r.ok) return undefined;
    const d = (await r.json()) as { inputs?: Input[] };
    return d.inputs?.[0];
  };
  // STREAM_SECONDS of stream at the measured rate have gone through the input's analyzer.
  const seen = await waitFor(
    `${STREAM_SECONDS} s of the test stream`,
    async () => {
      const i = await input();
      if (!i?.bitrate || !i.packets) return undefined;
      return i.packets * 188 * 8 >= STREAM_SECONDS * i.bitrate ? i : undefined;
    },
    30_000,
  );
  t.equal(seen.tr101290?.ptsError, 0, 'ptsError 0 from start-up on');
});
