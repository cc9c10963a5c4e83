import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { encodePnr } from '../../src/inputs/demuxer/input.ts';
import { splitterConsumers, t2miPlps } from '../../src/inputs/demuxer/shared.ts';
import { makeLavfiTs } from '../helpers/ffmpeg.ts';
import { probePrograms } from '../helpers/mpts.ts';
import { httpFor, makeHost, streamSet, tempDir, waitFor } from '../helpers/stream-host.ts';
import { encodeOuter } from '../helpers/t2mi-encode.ts';

const dir = tempDir(t, 'sluice-t2mi-');
const host = makeHost(dir);
const base = await httpFor(t, host.router);
const { open: stream } = streamSet(t, host);

/** ffprobe's programmes of a URL, as `{ programs }`. */
const probe = async (url: string) => ({ programs: await probePrograms(url) });

t.test('two PLPs of a T2-MI carrier: one demuxer each, decoded by ffprobe', async (t) => {
  const seconds = 4;
  const a = join(dir, 'plp0.ts');
  const b = join(dir, 'plp1.ts');
  makeLavfiTs(a, { size: '160x120', seconds, gop: 25, extra: ['-mpegts_service_id', '101'] });
  makeLavfiTs(b, {
    size: '160x120',
    seconds,
    gop: 25,
    muxrate: 1_500_000,
    extra: ['-c:v', 'mpeg2video', '-c:a', 'mp2', '-mpegts_service_id', '202'],
  });
  const outer = encodeOuter({
    plps: [
      { plp: 0, ts: readFileSync(a) },
      { plp: 1, ts: readFileSync(b), npd: true },
    ],
    dfl: 3000,
    seconds,
  });
  const file = join(dir, 'outer.ts');
  writeFileSync(file, outer);
  const src = await stream({
    id: 7,
    'stream-name': 'carrier',
    mpts: true,
    input: [{ type: 'file', 'file-path': file }],
  });
  const want = [
    { plp: 0, programme: 101, codecs: ['aac', 'h264'] },
    { plp: 1, programme: 202, codecs: ['mp2', 'mpeg2video'] },
  ];
  const demux = await Promise.all(
    want.map((w) =>
      stream({
        'stream-name': `plp${w.plp}`,
        input: [{ type: 'demuxer', 'mpts-id': 7, pnr: encodePnr(w.plp, w.programme) }],
      }),
    ),
  );
  await waitFor(
    () => demux.every((d) => d.state() === 'running'),
    15_000,
    'demuxer streams running',
  );
  t.equal(t2miPlps(src.hub), 2, 'one T2-MI reader on the carrier, two PLPs');
  t.equal(splitterConsumers(src.hub), 0, 'no splitter over the outer multiplex');
  t.equal(src.hub.size, 2, 'the multiplex bus has one reader subscribed (plus HTTP-TS)');
  for (const [i, w] of want.entries()) {
    const p = await probe(`${base}/plp${w.plp}/mpegts`);
    t.equal(p.programs.length, 1, `PLP ${w.plp}: exactly one programme`);
    t.equal(p.programs[0]!.program_num, w.programme);
    t.same(
      p.programs[0]!.streams.map((s) => s.codec_name).sort(),
      w.codecs,
      `PLP ${w.plp}: its codecs`,
    );
    const tr = (demux[i]!.status()['inputs'] as { transport: Record<string, unknown> }[])[0]!
      .transport;
    const t2 = tr['t2mi'] as Record<string, unknown>;
    t.equal(t2['carrier'], 'found');
    t.equal(t2['pid'], 0x1000);
    t.equal(t2['plp'], w.plp);
    t.equal(t2['crcErrors'], 0);
    t.equal(t2['badFrames'], 0);
    t.ok((t2['bbFrames'] as number) > 0);
    const plp = t2['plpStats'] as Record<string, number>;
    t.ok(plp['packetsOut']! > 0, 'inner packets out');
    if (w.plp === 1) t.ok(plp['nullsInserted']! > 0, 'deleted null packets put back');
  }
  await Promise.all(demux.map((d) => d.close()));
  t.equal(t2miPlps(src.hub), 0, 'the reader is gone with the last demuxer');
  t.equal(src.hub.size, 1);
});

t.test('a multiplex without a T2-MI carrier: the fault says so', async (t) => {
  const file = join(dir, 'plain.ts');
  makeLavfiTs(file, { size: '160x120', seconds: 1 });
  await stream({
    id: 8,
    'stream-name': 'plain',
    mpts: true,
    input: [{ type: 'file', 'file-path': file }],
  });
  const s = await stream({
    'stream-name': 'nocarrier',
    input: [{ type: 'demuxer', 'mpts-id': 8, pnr: encodePnr(0, 1) }],
  });
  const input = () => (s.status()['inputs'] as Record<string, unknown>[])[0]!;
  await waitFor(
    () => input()['message'] === 'no T2-MI carrier in multiplex stream 8',
    8000,
    'the fault',
  );
  t.equal(input()['state'], 'error');
});
