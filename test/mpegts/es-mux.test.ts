// The elementary-stream muxer on real encoder output: ffmpeg writes fragmented MP4 (H.264 + AAC,
// HEVC + AC-3, H.264 + MP3, MP2), the fMP4 demux feeds the muxer, and the TS it makes is checked
// with the repo's own parsers (PAT/PMT, continuity, PES timestamps, PCR spacing) and by ffprobe
// (codecs, PIDs, first timestamps equal to the source's).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { adtsHeaderFromAsc, EsMuxer } from '../../src/mpegts/es-mux.ts';
import {
  cc,
  hasPayload,
  payloadOffset,
  pid,
  pusi,
  TS_PACKET_SIZE,
} from '../../src/mpegts/packet.ts';
import { readPcr } from '../../src/mpegts/pcr.ts';
import { readTimestamp } from '../../src/mpegts/pes.ts';
import { parsePat, parsePmt } from '../../src/mpegts/psi.ts';
import { parseInit, parseSegment } from '../../src/protocols/mp4/fmp4.ts';
import { tempDir } from '../helpers/stream-host.ts';

const dir = tempDir(t, 'sluice-esmux-');

function fmp4(name: string, vcodec: string[] | null, acodec: string[] | null): Buffer {
  const out = join(dir, `${name}.mp4`);
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...(vcodec ? ['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25:duration=3'] : []),
    ...(acodec ? ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=3'] : []),
    ...(vcodec ?? []),
    ...(acodec ?? []),
    ...[
      '-movflags',
      `frag_keyframe+empty_moov+default_base_moof${acodec?.includes('ac3') ? '+delay_moov' : ''}`,
      '-f',
      'mp4',
      out,
    ],
  ]);
  return readFileSync(out);
}

/** Split at the first moof: initialisation segment, media. */
function split(b: Buffer): [Buffer, Buffer] {
  for (let o = 0; o + 8 <= b.length; ) {
    const size = b.readUInt32BE(o);
    if (b.toString('latin1', o + 4, o + 8) === 'moof') return [b.subarray(0, o), b.subarray(o)];
    o += size;
  }
  throw new Error('no moof');
}

function mux(
  file: Buffer,
  opts: { discontinuityAfter?: number; transient?: boolean; blocks?: Set<ArrayBufferLike> } = {},
): Buffer {
  const [initBytes, media] = split(file);
  const init = parseInit(initBytes);
  const chunks: Buffer[] = [];
  const m = new EsMuxer({
    // A transient batch is the sink's during the call only: copied.
    sink: (b) => {
      opts.blocks?.add(b.buffer);
      chunks.push(opts.transient ? Buffer.from(b) : b);
    },
    transient: opts.transient === true,
  });
  const index = new Map<number, number>();
  for (const tr of init.tracks) {
    if (!tr.codec) throw new Error(`unsupported ${tr.sampleEntry}`);
    index.set(
      tr.id,
      m.addTrack({
        codec: tr.codec,
        timescale: tr.timescale,
        ...(tr.config ? { config: tr.config } : {}),
      }),
    );
  }
  let n = 0;
  for (const f of parseSegment(media, init)) {
    if (n++ === opts.discontinuityAfter) m.discontinuity();
    if (!m.write(index.get(f.trackId)!, f)) throw new Error('frame refused');
  }
  m.flush();
  return Buffer.concat(chunks);
}

interface Check {
  pids: Map<number, number>;
  ccErrors: number;
  firstPts: Map<number, number>;
  pcrGapsMs: number[];
  discontinuityPids: Set<number>;
  streamTypes: number[];
}

/** Read the TS with the repo's parsers. */
function check(ts: Buffer): Check {
  const r: Check = {
    pids: new Map(),
    ccErrors: 0,
    firstPts: new Map(),
    pcrGapsMs: [],
    discontinuityPids: new Set(),
    streamTypes: [],
  };
  const lastCc = new Map<number, number>();
  let pmtPid = -1;
  let lastPcr = -1;
  if (ts.length % TS_PACKET_SIZE !== 0) throw new Error('not whole packets');
  for (let o = 0; o < ts.length; o += TS_PACKET_SIZE) {
    if (ts[o] !== 0x47) throw new Error('lost sync');
    const p = pid(ts, o);
    r.pids.set(p, (r.pids.get(p) ?? 0) + 1);
    if (ts[o + 3]! & 0x20 && ts[o + 4]! > 0 && ts[o + 5]! & 0x80) r.discontinuityPids.add(p);
    if (hasPayload(ts, o)) {
      const prev = lastCc.get(p);
      if (prev !== undefined && ((prev + 1) & 15) !== cc(ts, o)) r.ccErrors++;
      lastCc.set(p, cc(ts, o));
    }
    const pcr = readPcr(ts, o);
    if (pcr >= 0) {
      if (lastPcr >= 0) r.pcrGapsMs.push((pcr - lastPcr) / 27000);
      lastPcr = pcr;
    }
    if (!pusi(ts, o)) continue;
    const po = o + payloadOffset(ts, o);
    const pkt = ts.subarray(po, o + TS_PACKET_SIZE);
    if (p === 0) pmtPid = parsePat(pkt.subarray(1 + pkt[0]!)).programs[0]!.pid;
    else if (p === pmtPid) {
      if (r.streamTypes.length === 0)
        r.streamTypes = parsePmt(pkt.subarray(1 + pkt[0]!)).streams.map((s) => s.streamType);
    } else if (!r.firstPts.has(p)) r.firstPts.set(p, readTimestamp(pkt, 9));
  }
  return r;
}

interface Probed {
  streams: { codec_name: string; codec_type: string; id: string }[];
  packets: { stream_index: number; pts: number }[];
}

function probe(file: string, readPackets = true): Probed {
  const out = execFileSync('ffprobe', [
    ...['-v', 'error', '-show_streams', '-of', 'json'],
    ...(readPackets
      ? ['-show_entries', 'packet=stream_index,pts', '-read_intervals', '%+#40']
      : []),
    file,
  ]);
  return JSON.parse(out.toString()) as Probed;
}

function firstPts(p: Probed, index: number): number {
  return Math.min(...p.packets.filter((k) => k.stream_index === index).map((k) => k.pts));
}

t.test('H.264 (avcC) + AAC (AudioSpecificConfig → ADTS)', async (t) => {
  const src = fmp4(
    'h264-aac',
    ['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-bf', '2'],
    ['-c:a', 'aac', '-b:a', '64k'],
  );
  const ts = mux(src);
  const file = join(dir, 'h264-aac.ts');
  writeFileSync(file, ts);
  const c = check(ts);
  t.equal(c.ccErrors, 0, 'no continuity errors');
  t.same(c.streamTypes, [0x1b, 0x0f], 'PMT: H.264, AAC');
  t.ok(c.pids.get(0x100)! > 100 && c.pids.get(0x101)! > 10, 'video 0x100, audio 0x101');
  t.ok(c.pids.get(0) && c.pids.get(0)! >= 25, 'PAT repeated (3 s, every 100 ms)');
  t.ok(
    Math.max(...c.pcrGapsMs) <= 40.5,
    `PCR at most 40 ms apart (max ${Math.max(...c.pcrGapsMs)})`,
  );
  const p = probe(file);
  const v = p.streams.find((s) => s.codec_type === 'video');
  const a = p.streams.find((s) => s.codec_type === 'audio');
  t.equal(v?.codec_name, 'h264');
  t.equal(a?.codec_name, 'aac');
  t.equal(v?.id, '0x100');
  t.equal(a?.id, '0x101');
  // The source's first timestamps (in its timebase) equal the muxed ones in 90 kHz.
  const s = probe(join(dir, 'h264-aac.mp4'));
  const vi = p.streams.indexOf(v!);
  const ai = p.streams.indexOf(a!);
  const srcV = s.streams.findIndex((x) => x.codec_type === 'video');
  const srcA = s.streams.findIndex((x) => x.codec_type === 'audio');
  const [init] = split(src);
  const tracks = parseInit(init).tracks;
  const vScale = tracks.find((x) => x.codec === 'h264')!.timescale;
  const aScale = tracks.find((x) => x.codec === 'aac')!.timescale;
  const srcDiff = firstPts(s, srcA) / aScale - firstPts(s, srcV) / vScale;
  const outDiff = (firstPts(p, ai) - firstPts(p, vi)) / 90000;
  t.ok(Math.abs(srcDiff - outDiff) < 0.001, `A/V offset kept (${srcDiff} s vs ${outDiff} s)`);
  t.equal(
    c.firstPts.get(0x100),
    Math.round((firstPts(s, srcV) * 90000) / vScale),
    'first video PTS',
  );
});

t.test('HEVC (hvcC) + AC-3', async (t) => {
  const src = fmp4(
    'hevc-ac3',
    ['-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'log-level=error', '-g', '25'],
    ['-c:a', 'ac3', '-b:a', '96k'],
  );
  const ts = mux(src);
  const file = join(dir, 'hevc-ac3.ts');
  writeFileSync(file, ts);
  const c = check(ts);
  t.equal(c.ccErrors, 0);
  t.same(c.streamTypes, [0x24, 0x81], 'PMT: HEVC, AC-3');
  const p = probe(file, false);
  t.same(
    p.streams.map((s) => s.codec_name),
    ['hevc', 'ac3'],
  );
});

t.test('H.264 + MP3, and MP2 audio only (PCR on the audio PID)', async (t) => {
  const ts = mux(
    fmp4('h264-mp3', ['-c:v', 'libx264', '-preset', 'ultrafast'], ['-c:a', 'libmp3lame']),
  );
  writeFileSync(join(dir, 'h264-mp3.ts'), ts);
  t.same(
    probe(join(dir, 'h264-mp3.ts'), false).streams.map((s) => s.codec_name),
    ['h264', 'mp3'],
  );
  const mp2 = mux(fmp4('mp2', null, ['-c:a', 'mp2']));
  writeFileSync(join(dir, 'mp2.ts'), mp2);
  t.same(
    probe(join(dir, 'mp2.ts'), false).streams.map((s) => s.codec_name),
    ['mp2'],
  );
  const c = check(mp2);
  t.ok(c.pcrGapsMs.length > 50, 'PCR carried on the audio PID');
  t.equal(c.ccErrors, 0);
});

t.test('discontinuity(): every PID marked once, counters keep counting', async (t) => {
  const src = fmp4('disc', ['-c:v', 'libx264', '-preset', 'ultrafast'], ['-c:a', 'aac']);
  const ts = mux(src, { discontinuityAfter: 30 });
  const c = check(ts);
  t.equal(c.ccErrors, 0);
  t.same(
    [...c.discontinuityPids].sort((a, b) => a - b),
    [0, 0x100, 0x101, 0x1000],
  );
});

t.test('ADTS header from AudioSpecificConfig', async (t) => {
  // AAC-LC 48 kHz stereo: 0x11 0x90.
  t.same([...adtsHeaderFromAsc(Buffer.from([0x11, 0x90]))], [0xff, 0xf1, 0x4c, 0x80, 0, 0, 0xfc]);
  // HE-AAC (object type 5, explicit): carried as its AAC-LC core.
  const he = adtsHeaderFromAsc(Buffer.from([0x2b, 0x92, 0x08, 0x00]));
  t.equal(he[2]! >> 6, 1, 'profile LC');
  t.throws(() => adtsHeaderFromAsc(Buffer.from([0xf8])), /too short/);
});

t.test('Annex B H.264 with parameter sets given apart; bad frames refused', async (t) => {
  const out: Buffer[] = [];
  const m = new EsMuxer({ sink: (b) => out.push(b) });
  const sps = Buffer.from([0x67, 0x42, 0xc0, 0x1e]);
  const pps = Buffer.from([0x68, 0xce, 0x3c, 0x80]);
  const v = m.addTrack({ codec: 'h264', paramSets: [sps, pps] });
  t.ok(m.write(v, { pts: 3600, data: Buffer.from([0, 0, 1, 0x65, 1, 2, 3]), key: true }));
  t.notOk(m.write(v, { pts: 7200, data: Buffer.from([1, 2, 3]) }), 'no start code: refused');
  m.flush();
  const ts = Buffer.concat(out);
  const pes = ts.subarray(ts.length - TS_PACKET_SIZE);
  const at = payloadOffset(pes);
  const es = pes.subarray(at + 14);
  t.same(
    [...es.subarray(0, 6 + 8 + 8)],
    [0, 0, 0, 1, 9, 0xf0, 0, 0, 0, 1, ...sps, 0, 0, 0, 1, ...pps],
    'AUD, then SPS and PPS in front of the key frame',
  );
  t.equal(m.stats().dropped, 1);
  t.equal(readTimestamp(pes, at + 9), 3600);
});

t.test("batches: cut from one block, each the sink's to keep", async (t) => {
  const out: Buffer[] = [];
  const copies: string[] = [];
  const m = new EsMuxer({
    sink: (b) => {
      out.push(b);
      copies.push(b.toString('hex'));
    },
    batchPackets: 4,
  });
  const a = m.addTrack({ codec: 'mp2' });
  for (let i = 0; i < 200; i++) {
    const frame = Buffer.alloc(100 + ((i * 37) % 1500), i & 0xff);
    t.ok(m.write(a, { pts: i * 2160, data: frame }));
    if (i % 3 === 0) m.flush();
  }
  m.flush();
  t.ok(
    out.every((b) => b.length > 0 && b.length % TS_PACKET_SIZE === 0 && b.length <= 4 * 188),
    'whole packets, at most a batch each',
  );
  t.same(
    out.map((b) => b.toString('hex')),
    copies,
    'no batch overwritten by later ones',
  );
  const blocks = new Set(out.map((b) => b.buffer));
  t.ok(blocks.size * 50 < out.length, `${out.length} batches from ${blocks.size} blocks`);
  // The whole stream still parses: continuity on the audio PID.
  const c = check(Buffer.concat(out));
  t.equal(c.ccErrors, 0);
});

t.test('transient batches: the same bytes, written into one block', async (t) => {
  const src = fmp4('transient', ['-c:v', 'libx264', '-preset', 'ultrafast'], ['-c:a', 'aac']);
  const blocks = new Set<ArrayBufferLike>();
  const kept = mux(src);
  const transient = mux(src, { transient: true, blocks });
  t.ok(transient.equals(kept), `byte-identical TS (${transient.length} bytes)`);
  t.equal(blocks.size, 1, 'every batch in the one block');

  // Frames past the scratch's first size (64 KiB) grow it while a batch is part written (one
  // packet of it after the first two frames): that packet goes over to the new memory.
  const sizes = [300, 200, 70_000, 500, 200_000, 1_000, 40];
  const run = (transient: boolean) => {
    const out: Buffer[] = [];
    const seen = new Set<ArrayBufferLike>();
    const m = new EsMuxer({
      sink: (b) => {
        seen.add(b.buffer);
        out.push(transient ? Buffer.from(b) : b);
      },
      batchPackets: 5,
      transient,
    });
    const a = m.addTrack({ codec: 'mp2' });
    sizes.forEach((n, i) => {
      const frame = Buffer.alloc(n);
      for (let k = 0; k < n; k++) frame[k] = (k * 13 + i) & 0xff;
      m.write(a, { pts: i * 2160, data: frame });
    });
    m.flush();
    return { ts: Buffer.concat(out), blocks: seen.size };
  };
  const a = run(false);
  const b = run(true);
  t.ok(b.ts.equals(a.ts), 'byte-identical across the scratch growing');
  t.equal(b.blocks, 3, 'a new block only when the scratch grew (twice)');
  t.equal(check(b.ts).ccErrors, 0);
});
