// BISS end to end: a two-programme MPTS scrambled with libdvbcsa (101 with a BISS-1 key, 102
// with a 16-digit key) played by the `file` input of an `mpts: true` stream with biss-pnr /
// biss-key; a demuxer stream of each programme, its HTTP-TS decoded by ffmpeg into the source's
// own frames. A wrong key shows as "still scrambled" in the input status and the scrambled
// alert, while the stream keeps running.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { loadConfigText } from '../../src/config/store.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { bissScramble } from '../../src/native/biss.ts';
import { frameHashes, makeTwoProgrammeTs, P101, P102 } from '../helpers/biss.ts';
import { captureHttp } from '../helpers/mpts.ts';
import { httpFor, makeHost, streamSet, tempDir, waitFor } from '../helpers/stream-host.ts';

const KEY1 = '123456ABCDEF';
const KEYE = '0F1E2D3C4B5A6978';
const dir = tempDir(t, 'sluice-biss-e2e-');
const host = makeHost(dir);
const base = await httpFor(t, host.router);

const clearFile = join(dir, 'clear.ts');
const clear = makeTwoProgrammeTs(clearFile, 3);
const scrambled = Buffer.from(clear);
bissScramble(scrambled, KEY1, P101.pids, 2);
bissScramble(scrambled, KEYE, P102.pids, 3);
const scrambledFile = join(dir, 'scrambled.ts');
writeFileSync(scrambledFile, scrambled);

const { open: stream } = streamSet(t, host);

/** About `bytes` of a stream's HTTP-TS output. */
const capture = (name: string, bytes: number) => captureHttp(`${base}/${name}/mpegts`, bytes);

interface BissTargetStatus {
  pnr: number;
  key: string;
  state: string;
  descrambled: number;
  pesOk: number;
  pesBad: number;
  stillScrambled: number;
}
function bissStatus(s: StreamInstance): {
  targets: BissTargetStatus[];
  stillScrambledPids: number[];
} {
  return (s.status()['inputs'] as { biss: never }[])[0]!.biss;
}

const mptsRecord = (id: number, name: string, keys: string[]) => ({
  id,
  'stream-name': name,
  mpts: true,
  'biss-pnr': [101, 102],
  'biss-key': keys,
  input: [{ type: 'file', 'file-path': scrambledFile }],
});

t.test('the configuration with biss on a multiplex stream is valid', async (t) => {
  const text = JSON.stringify({
    stream: [
      mptsRecord(7, 'mux', [KEY1, KEYE]),
      { 'stream-name': 'ch101', input: [{ type: 'demuxer', 'mpts-id': 7, pnr: 101 }] },
    ],
  });
  t.doesNotThrow(() => loadConfigText(text));
});

t.test('scrambled MPTS → biss keys → demuxers decode the source frames', async (t) => {
  const mux = await stream(mptsRecord(7, 'mux', [KEY1, KEYE]));
  const ch = await Promise.all(
    [101, 102].map((pnr) =>
      stream({ 'stream-name': `ch${pnr}`, input: [{ type: 'demuxer', 'mpts-id': 7, pnr }] }),
    ),
  );
  await waitFor(() => ch.every((c) => c.state() === 'running'), 15_000, 'demuxers running');
  for (const [i, pnr] of [101, 102].entries()) {
    const ts = await capture(`ch${pnr}`, 150_000);
    let scrambledOut = 0;
    for (let o = 0; o + 188 <= ts.length; o += 188) if (ts[o + 3]! >> 6 !== 0) scrambledOut++;
    t.equal(scrambledOut, 0, `ch${pnr}: no scrambled packet reaches the demuxer's output`);
    const file = join(dir, `ch${pnr}.ts`);
    writeFileSync(file, ts);
    const want = new Set(frameHashes(clearFile, `0:p:${pnr}:v:0`));
    // The capture ends mid-PES: its last picture is decoded from a cut access unit, not judged.
    const got = frameHashes(file, '0:v:0').slice(0, -1);
    t.ok(got.length >= 10, `ch${pnr}: ffmpeg decoded ${got.length} frames`);
    t.ok(
      got.every((h) => want.has(h)),
      `ch${pnr}: every decoded frame (the last, cut, aside) is a frame of the clear source`,
    );
    // Still (or again, after a dip of the file source under load) running.
    await waitFor(() => ch[i]!.state() === 'running', 15_000, `ch${pnr} running`);
  }
  const st = bissStatus(mux);
  t.same(
    st.targets.map((x) => [x.pnr, x.key, x.state, x.pesBad]),
    [
      [101, 'BISS-1', 'descrambling', 0],
      [102, 'BISS-E', 'descrambling', 0],
    ],
  );
  t.ok(st.targets.every((x) => x.descrambled > 0 && x.pesOk > 0));
  t.same(mux.engine.scrambledPids(), [], 'no scrambled PID left on the multiplex');
  t.notOk(
    (mux.status()['alerts'] as { id?: string; key?: string }[]).length,
    'no alert on the multiplex stream',
  );
});

t.test('a wrong key: "still scrambled" in the status and alert, not a dead stream', async (t) => {
  const mux = await stream(mptsRecord(8, 'mux-wrong', ['123456ABCDEE', KEYE]));
  await waitFor(
    () =>
      bissStatus(mux).targets[0]!.state === 'still scrambled' &&
      bissStatus(mux).stillScrambledPids.length === 2,
    10_000,
    'programme 101 still scrambled',
  );
  const st = bissStatus(mux);
  t.ok(st.targets[0]!.stillScrambled > 0 && st.targets[0]!.pesOk === 0);
  t.equal(st.targets[1]!.state, 'descrambling', 'the other programme is descrambled');
  t.same(st.stillScrambledPids, P101.pids);
  await waitFor(() => mux.state() === 'running', 10_000, 'the stream runs');
  const alerts = await waitFor(
    () => {
      const a = mux.status()['alerts'] as { message: string }[];
      return a.length ? a : null;
    },
    5000,
    'the scrambled alert',
  );
  t.match(
    (alerts ?? []).map((a) => a.message).join('\n'),
    /still scrambled after BISS descrambling: programme 101 \(wrong key\?\)/,
  );
});
