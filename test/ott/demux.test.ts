// The packager's TS demultiplexer on crafted streams: head-only PES end shortly after the
// coded picture's start code (found across packet edges, never in the PES header), transient
// PES reuse one buffer per PID but are copied out when a keeper appears mid-PES, PSI sections
// spanning pushes survive the caller reusing its buffer, a PMT change stops a dropped PID, and
// PES come out whole whatever their packets' payload sizes and the batch's alignment in memory.
import t from 'tap';
import {
  findPicture,
  PES_HEAD_BYTES,
  type Pes,
  PICTURE_HEAD_BYTES,
  TsDemux,
} from '../../src/ott/demux/ts.ts';
import { pictureStart } from '../../src/ott/tracks.ts';
import { packet, pat, pmt, psiPackets, putPts } from '../helpers/ts-craft.ts';

const PMT_PID = 0x100;
const VIDEO_PID = 0x101;
const AUDIO_PID = 0x102;
const H264 = 0x1b;
const AAC = 0x0f;
const h264Picture = pictureStart('h264')!;

/** A PES header (no length: video style unless `declared`) with a PTS. */
function pesHeader(pts: number, declared = 0, streamId = 0xe0): Buffer {
  const h = Buffer.alloc(14);
  h.set([0, 0, 1, streamId]);
  h.writeUInt16BE(declared ? declared + 8 : 0, 4);
  h.set([0x80, 0x80, 5], 6);
  putPts(h, 9, pts);
  return h;
}

/** A PES cut into 184-byte payloads on `pid` (the last one padded by an adaptation field). */
function pesPackets(pid: number, pes: Buffer, cc: { n: number }): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o < pes.length; o += 184) {
    const payload = pes.subarray(o, o + 184);
    out.push(
      packet({ pid, cc: cc.n++ & 15, pusi: o === 0, payload, adaptation: payload.length < 184 }),
    );
  }
  return out;
}

function header(streams: { type: number; pid: number }[], version = 0): Buffer[] {
  return [
    ...psiPackets(0, [pat([{ pnr: 1, pid: PMT_PID }])]),
    ...psiPackets(PMT_PID, [pmt(1, VIDEO_PID, streams, version)]),
  ];
}

/** An H.264 access unit: AUD, SEI of `seiBytes`, then an IDR slice of `sliceBytes`. */
function accessUnit(seiBytes: number, sliceBytes: number): Buffer {
  const sei = Buffer.alloc(seiBytes, 0x55);
  sei[0] = 0x06;
  const slice = Buffer.alloc(sliceBytes, 0x77);
  slice[0] = 0x65;
  return Buffer.concat([
    Buffer.from([0, 0, 0, 1, 0x09, 0xf0]),
    Buffer.from([0, 0, 0, 1]),
    sei,
    Buffer.from([0, 0, 1]),
    slice,
  ]);
}

/** A demuxer whose PES land in the returned list. */
function demuxer(): { d: TsDemux; got: Pes[] } {
  const got: Pes[] = [];
  return { d: new TsDemux({ pmt: () => {}, pes: (p) => got.push(p) }), got };
}

t.test('findPicture stops a head past the picture start code, across pushes', async (t) => {
  const es = accessUnit(300, 5000);
  const pes = Buffer.concat([pesHeader(9000), es]);
  const sliceAt = 14 + 6 + 4 + 300 + 3; // header, AUD, SEI start code, SEI, slice start code
  for (const step of [1, 2, 3, 7, 184]) {
    const a = {
      buf: Buffer.alloc(PES_HEAD_BYTES),
      size: 0,
      limit: PES_HEAD_BYTES,
      picture: h264Picture as typeof h264Picture | undefined,
      scan: 0,
    };
    while (a.size < a.limit && a.size < pes.length) {
      const n = Math.min(step, a.limit - a.size, pes.length - a.size);
      pes.copy(a.buf, a.size, a.size, a.size + n);
      a.size += n;
      findPicture(a);
    }
    t.equal(a.picture, undefined, `step ${step}: picture found`);
    t.ok(a.limit >= sliceAt + PICTURE_HEAD_BYTES, `step ${step}: head keeps the slice header`);
    t.ok(a.limit <= sliceAt + PICTURE_HEAD_BYTES + step, `step ${step}: head ends right after`);
  }
  // The PES start code (00 00 01 E0) is never taken for a picture, even when the test would.
  const a = {
    buf: pes,
    size: 9 + pes[8]!,
    limit: PES_HEAD_BYTES,
    picture: () => true,
    scan: 0,
  };
  findPicture(a);
  t.equal(a.limit, PES_HEAD_BYTES, 'the PES header is skipped');
});

t.test('a head-only PES keeps the NAL units before the slice and counts the rest', async (t) => {
  const { d, got } = demuxer();
  d.headOnly = (pid) => (pid === VIDEO_PID ? h264Picture : undefined);
  const cc = { n: 0 };
  const first = accessUnit(1000, 20_000);
  const second = accessUnit(10, 3000);
  const ts = Buffer.concat([
    ...header([{ type: H264, pid: VIDEO_PID }]),
    ...pesPackets(VIDEO_PID, Buffer.concat([pesHeader(9000), first]), cc),
    ...pesPackets(VIDEO_PID, Buffer.concat([pesHeader(12600), second]), cc),
  ]);
  for (let o = 0; o < ts.length; o += 188 * 3) d.push(ts.subarray(o, o + 188 * 3));
  d.flush();
  t.equal(got.length, 2);
  const [p1, p2] = got as [Pes, Pes];
  t.equal(p1.pts, 9000);
  t.equal(p1.size, first.length, 'size counts the whole payload');
  t.ok(p1.head, 'marked as a head');
  const slice = first.indexOf(Buffer.from([0, 0, 1, 0x65]));
  t.ok(p1.data.length >= slice + 4 + PICTURE_HEAD_BYTES - 1, 'the slice header is kept');
  t.ok(p1.data.length < slice + 4 + 184, 'nothing kept a packet past the slice header');
  t.same(p1.data, first.subarray(0, p1.data.length), 'the kept bytes are the payload');
  t.equal(p2.size, second.length);
  t.ok(p2.data.length <= 184, 'a short head fits the first packet');
});

t.test('transient PES share one buffer; a keeper appearing mid-PES gets a copy', async (t) => {
  // Buffers are told apart by `.buffer` below: none may be a slice of Node's shared pool, where
  // two small buffers share an ArrayBuffer or not depending on what was allocated before.
  const poolSize = Buffer.poolSize;
  Buffer.poolSize = 0;
  t.teardown(() => {
    Buffer.poolSize = poolSize;
  });
  const got: { pes: Pes; copy: Buffer }[] = [];
  const d = new TsDemux({
    pmt: () => {},
    pes: (p) => got.push({ pes: p, copy: Buffer.from(p.data) }),
  });
  let transient = true;
  d.transient = () => transient;
  const cc = { n: 0 };
  const frames = [0x11, 0x22, 0x33].map((v) => Buffer.alloc(700, v));
  const pes = frames.map((f, i) =>
    pesPackets(AUDIO_PID, Buffer.concat([pesHeader(1000 * i, f.length, 0xc0), f]), cc),
  );
  d.push(Buffer.concat(header([{ type: AAC, pid: AUDIO_PID }])));
  d.push(Buffer.concat(pes[0]!));
  d.push(Buffer.concat(pes[1]!));
  t.equal(got.length, 2);
  t.equal(got[0]!.pes.data.buffer, got[1]!.pes.data.buffer, 'the same buffer is reused');
  t.same(got[1]!.copy, frames[1], 'the second PES is read correctly');
  // The third PES starts while transient, then a keeper (CMAF) appears before it completes.
  const third = pes[2]!;
  d.push(third[0]!);
  transient = false;
  d.push(Buffer.concat(third.slice(1)));
  t.equal(got.length, 3);
  t.not(got[2]!.pes.data.buffer, got[1]!.pes.data.buffer, 'handed over in a buffer of its own');
  t.same(got[2]!.pes.data, frames[2]);
  // Later PES of a kept PID are never in the reused buffer.
  d.push(Buffer.concat(pes[0]!.map((p) => Buffer.from(p))));
  t.not(got[3]!.pes.data.buffer, got[1]!.pes.data.buffer);
  t.same(got[3]!.pes.data, frames[0]);
});

t.test('a PMT spanning two pushes survives the caller reusing its buffer', async (t) => {
  const streams = [];
  for (let i = 0; i < 40; i++) streams.push({ type: AAC, pid: 0x200 + i });
  const pmtPackets = psiPackets(PMT_PID, [pmt(1, 0x200, streams)]);
  t.ok(pmtPackets.length >= 2, 'the section spans packets');
  let seen: number[] = [];
  const d = new TsDemux({ pmt: (s) => (seen = s.map((x) => x.pid)), pes: () => {} });
  const scratch = Buffer.alloc(188);
  for (const p of [...psiPackets(0, [pat([{ pnr: 1, pid: PMT_PID }])]), ...pmtPackets]) {
    p.copy(scratch);
    d.push(scratch);
    scratch.fill(0xee); // the caller reuses its receive buffer
  }
  t.same(
    seen,
    streams.map((s) => s.pid),
    'every stream of the section is read',
  );
});

t.test('a PID dropped from the PMT is no longer reassembled', async (t) => {
  const { d, got } = demuxer();
  const cc = { n: 0 };
  const frame = Buffer.alloc(100, 1);
  const onePes = (pts: number) =>
    Buffer.concat(pesPackets(AUDIO_PID, Buffer.concat([pesHeader(pts, 100, 0xc0), frame]), cc));
  d.push(Buffer.concat(header([{ type: AAC, pid: AUDIO_PID }])));
  d.push(onePes(0));
  t.equal(got.length, 1);
  d.push(Buffer.concat(header([{ type: AAC, pid: 0x1ff }], 1)));
  d.push(onePes(1000));
  t.equal(got.length, 1, 'nothing from the dropped PID');
  t.equal(d.esInfo(AUDIO_PID), undefined);
  d.push(Buffer.concat(header([{ type: AAC, pid: AUDIO_PID }], 2)));
  d.push(onePes(2000));
  t.equal(got.length, 2, 'back once listed again');
  t.equal(got[1]!.pts, 2000);
});

t.test('the latest PAT and PMT packets are kept, each in one buffer', async (t) => {
  const d = new TsDemux({ pmt: () => {}, pes: () => {} });
  const cc = { n: 0 };
  const first = header([{ type: AAC, pid: AUDIO_PID }]);
  d.push(Buffer.concat(first));
  const pat0 = d.patPacket!;
  const pmt0 = d.pmtPacket!;
  t.same(pat0, first[0], 'the PAT packet');
  t.same(pmt0, first[1], 'the PMT packet');
  const again = [
    ...psiPackets(0, [pat([{ pnr: 1, pid: PMT_PID }])], cc),
    ...psiPackets(PMT_PID, [pmt(1, VIDEO_PID, [{ type: AAC, pid: AUDIO_PID }])], cc),
  ];
  again[0]![3] = (again[0]![3]! & 0xf0) | 7; // another continuity counter
  const input = Buffer.concat(again);
  d.push(input);
  input.fill(0); // the caller's buffer is reused
  t.equal(d.patPacket, pat0, 'the same buffer');
  t.equal(d.patPacket![3]! & 0x0f, 7, 'holding the latest repetition');
  t.same(d.pmtPacket, again[1]);
});

t.test(
  'PES come out byte for byte whatever the payload sizes and the batch alignment',
  async (t) => {
    // Payload sizes as muxers make them: a first packet shortened by an adaptation field, whole
    // 184-byte payloads, 176 beside a PCR, odd sizes (stuffing) that move later payloads off
    // word boundaries, and a short last packet.
    const sizes = [170, 184, 184, 176, 184, 181, 184, 184, 182, 184, 184, 184, 175, 184, 184];
    const pesOf = (pts: number, declared: boolean): { pes: Buffer; es: Buffer } => {
      const total = sizes.reduce((x, y) => x + y, 0) - 100;
      const es = Buffer.alloc(total - 14);
      for (let i = 0; i < es.length; i++) es[i] = (i * 31 + pts) & 0xff;
      return { pes: Buffer.concat([pesHeader(pts, declared ? es.length : 0), es]), es };
    };
    const cut = (pid: number, pes: Buffer, cc: { n: number }): Buffer[] => {
      const out: Buffer[] = [];
      for (let o = 0, i = 0; o < pes.length; i++) {
        const payload = pes.subarray(o, o + sizes[i % sizes.length]!);
        out.push(
          packet({
            pid,
            cc: cc.n++ & 15,
            pusi: o === 0,
            payload,
            adaptation: payload.length < 184,
          }),
        );
        o += payload.length;
      }
      return out;
    };
    const hex = (l: { es: Buffer }[]) => l.map((x) => x.es.toString('hex'));
    const cc = { n: 0 };
    const video = [pesOf(9000, false), pesOf(12600, false), pesOf(16200, false)];
    const audio = [pesOf(9100, true), pesOf(11000, true)];
    const packets = Buffer.concat([
      ...header([
        { type: H264, pid: VIDEO_PID },
        { type: AAC, pid: AUDIO_PID },
      ]),
      ...cut(VIDEO_PID, video[0]!.pes, cc),
      ...cut(AUDIO_PID, audio[0]!.pes, { n: 0 }),
      ...cut(VIDEO_PID, video[1]!.pes, cc),
      ...cut(AUDIO_PID, audio[1]!.pes, { n: 1 }),
      ...cut(VIDEO_PID, video[2]!.pes, cc),
    ]);
    for (const offset of [0, 1, 2, 3])
      for (const batch of [1, 3, 1000]) {
        const memory = Buffer.alloc(packets.length + offset);
        const input = memory.subarray(offset);
        packets.copy(input);
        const { d, got } = demuxer();
        for (let o = 0; o < input.length; o += batch * 188)
          d.push(input.subarray(o, Math.min(input.length, o + batch * 188)));
        d.flush();
        const at = `offset ${offset}, ${batch} packets a push`;
        const data = (pid: number) =>
          got.filter((p) => p.pid === pid).map((p) => p.data.toString('hex'));
        t.same(data(VIDEO_PID), hex(video), `${at}: video`);
        t.same(data(AUDIO_PID), hex(audio), `${at}: audio`);
      }
  },
);
