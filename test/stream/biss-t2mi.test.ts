import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { loadConfigText } from '../../src/config/store.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { encodePnr } from '../../src/inputs/demuxer/input.ts';
import { bissScramble } from '../../src/native/biss.ts';
import { frameHashes } from '../helpers/biss.ts';
import { makeLavfiTs } from '../helpers/ffmpeg.ts';
import { captureHttp, probePrograms } from '../helpers/mpts.ts';
import { httpFor, makeHost, streamSet, tempDir, waitFor } from '../helpers/stream-host.ts';
import { encodeOuter } from '../helpers/t2mi-encode.ts';

const KEY = '123456ABCDEF';
const CARRIER = 0x1000;
const dir = tempDir(t, 'sluice-biss-t2mi-');
const host = makeHost(dir);
const base = await httpFor(t, host.router);

const seconds = 4;
const inner = join(dir, 'plp0.ts');
makeLavfiTs(inner, { size: '160x120', seconds, gop: 25, extra: ['-mpegts_service_id', '101'] });
const outer = encodeOuter({ plps: [{ plp: 0, ts: readFileSync(inner) }], dfl: 3000, seconds });
const scrambled = Buffer.from(outer);
const nScrambled = bissScramble(scrambled, KEY, [CARRIER], 2);
const scrambledFile = join(dir, 'outer-scrambled.ts');
writeFileSync(scrambledFile, scrambled);

const { open: stream } = streamSet(t, host);

/** ffprobe's programmes of a URL, as `{ programs }`. */
const probe = async (url: string) => ({ programs: await probePrograms(url) });

/** About `bytes` of a stream's HTTP-TS output. */
const capture = (name: string, bytes: number) => captureHttp(`${base}/${name}/mpegts`, bytes);

interface BissTargetStatus {
  pnr: number;
  state: string;
  pmtPid: number;
  pids: number[];
  carrierPid?: number;
  descrambled: number;
  pesOk: number;
  pesBad: number;
}
function bissStatus(s: StreamInstance): {
  targets: BissTargetStatus[];
  stillScrambledPids: number[];
} {
  return (s.status()['inputs'] as { biss: never }[])[0]!.biss;
}

const mux = (id: number, name: string, key: string) => ({
  id,
  'stream-name': name,
  mpts: true,
  'biss-pnr': [-1],
  'biss-key': [key],
  input: [{ type: 'file', 'file-path': scrambledFile }],
});

t.test('a carrier target in the configuration is valid', async (t) => {
  t.ok(nScrambled > 500, `${nScrambled} carrier packets scrambled in the fixture`);
  const text = JSON.stringify({
    stream: [
      mux(7, 'mux', KEY),
      {
        'stream-name': 'plp0',
        input: [{ type: 'demuxer', 'mpts-id': 7, pnr: encodePnr(0, 101) }],
      },
    ],
  });
  t.doesNotThrow(() => loadConfigText(text));
});

t.test('biss-pnr -1 descrambles the carrier: PLP 0 decapsulated and decoded', async (t) => {
  const m = await stream(mux(7, 'mux', KEY));
  const d = await stream({
    'stream-name': 'plp0',
    input: [{ type: 'demuxer', 'mpts-id': 7, pnr: encodePnr(0, 101) }],
  });
  await waitFor(() => d.state() === 'running', 15_000, 'the demuxer stream running');
  const p = await probe(`${base}/plp0/mpegts`);
  t.equal(p.programs.length, 1, 'exactly one programme');
  t.equal(p.programs[0]!.program_num, 101);
  t.same(p.programs[0]!.streams.map((s) => s.codec_name).sort(), ['aac', 'h264']);
  const ts = await capture('plp0', 150_000);
  const file = join(dir, 'plp0-out.ts');
  writeFileSync(file, ts);
  const want = new Set(frameHashes(inner, '0:v:0'));
  // The capture ends mid-PES: its last picture is decoded from a cut access unit, not judged.
  const got = frameHashes(file, '0:v:0').slice(0, -1);
  t.ok(got.length >= 10, `ffmpeg decoded ${got.length} frames`);
  t.ok(
    got.every((h) => want.has(h)),
    'every decoded frame (the last, cut, aside) is a frame of the source',
  );
  const tr = (d.status()['inputs'] as { transport: Record<string, unknown> }[])[0]!.transport;
  const t2 = tr['t2mi'] as Record<string, unknown>;
  t.equal(t2['pid'], CARRIER);
  t.equal(t2['crcErrors'], 0, 'no T2-MI packet fails its CRC after descrambling');
  t.ok((t2['bbFrames'] as number) > 0);
  const st = bissStatus(m);
  const x = st.targets[0]!;
  t.same(
    [x.pnr, x.state, x.pmtPid, x.pids, x.carrierPid, x.pesBad],
    [-1, 'descrambling', 0x100, [CARRIER], CARRIER, 0],
  );
  t.ok(x.descrambled > 0 && x.pesOk > 0);
  t.same(m.engine.scrambledPids(), [], 'no scrambled PID left on the multiplex');
});

t.test('a wrong key on the carrier: "still scrambled" and the alert', async (t) => {
  const m = await stream(mux(8, 'mux-wrong', '123456ABCDEE'));
  await waitFor(
    () => bissStatus(m).targets[0]!.state === 'still scrambled',
    10_000,
    'the carrier still scrambled',
  );
  t.same(bissStatus(m).stillScrambledPids, [CARRIER]);
  const alerts = await waitFor(
    () => {
      const a = m.status()['alerts'] as { message: string }[];
      return a.length ? a : null;
    },
    5000,
    'the scrambled alert',
  );
  t.match(
    (alerts ?? []).map((a) => a.message).join('\n'),
    /still scrambled after BISS descrambling: the T2-MI carrier \(PLP 0\) \(wrong key\?\)/,
  );
});
