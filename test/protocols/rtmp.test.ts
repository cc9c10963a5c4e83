// RTMP's pure parts: the chunk stream (all four header types, extended timestamps, a message
// split across chunks and interleaved with another chunk stream, any byte slicing, chunk size
// changes and their bounds), AMF0 (round trip, malformed and hostile packets) and FLV tag
// bodies into the elementary-stream muxer.
import t from 'tap';
import { decodeAmf0, encodeAmf0 } from '../../src/protocols/rtmp/amf0.ts';
import {
  ChunkReader,
  ChunkWriter,
  MSG_AUDIO,
  MSG_COMMAND_AMF0,
  MSG_VIDEO,
  type RtmpMessage,
  SLAB_BYTES,
  SLAB_PIECE_BYTES,
  setChunkSize,
} from '../../src/protocols/rtmp/chunk.ts';
import { parseAudioTag, parseVideoTag } from '../../src/protocols/rtmp/flv.ts';
import { FlvRemuxer } from '../../src/protocols/rtmp/remux.ts';

function collect(max?: number): { r: ChunkReader; got: RtmpMessage[] } {
  const got: RtmpMessage[] = [];
  return { r: new ChunkReader((m) => got.push(m), { maxMessageBytes: max }), got };
}

function payload(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 7 + seed) & 0xff;
  return b;
}

t.test('writer → reader round trip, in every slicing', async (t) => {
  const w = new ChunkWriter();
  w.chunkSize = 100;
  const msgs: RtmpMessage[] = [
    { csid: 3, type: MSG_COMMAND_AMF0, streamId: 0, timestamp: 0, payload: payload(10, 1) },
    { csid: 6, type: MSG_VIDEO, streamId: 1, timestamp: 40, payload: payload(333, 2) },
    { csid: 70, type: MSG_AUDIO, streamId: 1, timestamp: 0x1000000, payload: payload(250, 3) },
    { csid: 400, type: MSG_AUDIO, streamId: 1, timestamp: 5, payload: Buffer.alloc(0) },
  ];
  const bytes = Buffer.concat([
    new ChunkWriter().write(setChunkSize(100)),
    ...msgs.map((m) => w.write(m)),
  ]);
  for (const step of [1, 2, 7, 100, bytes.length]) {
    const { r, got } = collect();
    for (let i = 0; i < bytes.length; i += step) r.push(bytes.subarray(i, i + step));
    t.equal(got.length, 5, `slices of ${step}`);
    t.same(
      got.slice(1).map((m) => [m.csid, m.type, m.streamId, m.timestamp, m.payload.toString('hex')]),
      msgs.map((m) => [m.csid, m.type, m.streamId, m.timestamp, m.payload.toString('hex')]),
    );
    t.equal(r.peerChunkSize, 100);
  }
});

/** A hand-built chunk: basic header + message header fields by fmt. */
function chunk(fmt: number, csid: number, h: number[], body: Buffer): Buffer {
  return Buffer.concat([Buffer.of((fmt << 6) | csid), Buffer.from(h), body]);
}

t.test('interleaved chunk streams and header types 1, 2, 3 with deltas', async (t) => {
  const { r, got } = collect();
  const a = payload(200, 9); // 2 chunks of 128 + 72 on csid 4
  const b = payload(20, 5);
  r.push(
    Buffer.concat([
      // csid 4 fmt 0: ts 1000, len 200, type 9, stream 1
      chunk(0, 4, [0, 0x03, 0xe8, 0, 0, 200, 9, 1, 0, 0, 0], a.subarray(0, 128)),
      // csid 5 fmt 0 in between: ts 10, len 20, type 8
      chunk(0, 5, [0, 0, 10, 0, 0, 20, 8, 1, 0, 0, 0], b),
      // csid 4 continuation
      chunk(3, 4, [], a.subarray(128)),
      // csid 5 fmt 1: delta 23, len 20, type 8
      chunk(1, 5, [0, 0, 23, 0, 0, 20, 8], b),
      // csid 5 fmt 2: delta 21
      chunk(2, 5, [0, 0, 21], b),
      // csid 5 fmt 3: a new message, same delta again
      chunk(3, 5, [], b),
    ]),
  );
  t.same(
    got.map((m) => [m.csid, m.type, m.timestamp, m.payload.length]),
    [
      [5, 8, 10, 20],
      [4, 9, 1000, 200],
      [5, 8, 33, 20],
      [5, 8, 54, 20],
      [5, 8, 75, 20],
    ],
  );
  t.equal(got[1]!.payload.toString('hex'), a.toString('hex'), 'reassembled across the interleave');
});

t.test('extended timestamp, also repeated on continuation chunks', async (t) => {
  const { r, got } = collect();
  const p = payload(150, 1);
  const ext = [0x12, 0x34, 0x56, 0x78];
  r.push(
    Buffer.concat([
      chunk(0, 4, [0xff, 0xff, 0xff, 0, 0, 150, 9, 1, 0, 0, 0, ...ext], p.subarray(0, 128)),
      chunk(3, 4, ext, p.subarray(128)),
    ]),
  );
  t.equal(got.length, 1);
  t.equal(got[0]!.timestamp, 0x12345678);
  t.equal(got[0]!.payload.toString('hex'), p.toString('hex'));
});

t.test('bounds: chunk size 2^31, 0, a message over the cap, a header-less stream', async (t) => {
  const huge = Buffer.concat([
    chunk(0, 2, [0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0], Buffer.of(0x80, 0, 0, 0)),
  ]);
  const before = process.memoryUsage().arrayBuffers;
  t.throws(() => collect().r.push(huge), { name: 'RtmpProtocolError' }, '2^31 refused');
  t.ok(process.memoryUsage().arrayBuffers - before < 64 * 1024 * 1024, 'nothing big allocated');
  const zero = chunk(0, 2, [0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0], Buffer.of(0, 0, 0, 0));
  t.throws(() => collect().r.push(zero), /invalid chunk size 0/);
  // 0x7fffffff is valid: taken as the largest message length (no allocation from it).
  const { r, got } = collect();
  r.push(chunk(0, 2, [0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0], Buffer.of(0x7f, 0xff, 0xff, 0xff)));
  t.equal(r.peerChunkSize, 0xffffff);
  const big = payload(1000, 3);
  r.push(chunk(0, 4, [0, 0, 0, 0, 0x03, 0xe8, 9, 1, 0, 0, 0], big));
  t.equal(got[1]!.payload.length, 1000, 'a whole message in one chunk');
  const small = collect(1000);
  t.throws(
    () => small.r.push(chunk(0, 4, [0, 0, 0, 0xff, 0xff, 0xff, 9, 1, 0, 0, 0], Buffer.alloc(0))),
    /over the 1000 byte cap/,
  );
  t.throws(() => collect().r.push(chunk(3, 9, [], Buffer.alloc(10))), /without a full header/);
});

t.test('AMF0 round trip', async (t) => {
  const values = [
    'connect',
    1,
    { app: 'live', tcUrl: 'rtmp://h/live', fpad: false, n: 3.5, nested: { a: null, b: [1, 'x'] } },
    null,
    undefined,
    'é'.repeat(40000), // a long string (over 65535 bytes in UTF-8)
  ];
  const back = decodeAmf0(encodeAmf0(...values));
  t.same(back, values);
  t.ok(decodeAmf0(encodeAmf0(new Date(1000)))[0] instanceof Date);
  // ECMA array (onMetaData) decodes as an object
  const ecma = Buffer.concat([
    Buffer.of(0x02, 0, 10),
    Buffer.from('onMetaData'),
    Buffer.of(0x08, 0, 0, 0, 1, 0, 5),
    Buffer.from('width'),
    Buffer.of(0),
    Buffer.alloc(8),
    Buffer.of(0, 0, 9),
  ]);
  t.same(decodeAmf0(ecma), ['onMetaData', { width: 0 }]);
});

t.test('AMF0 malformed and hostile packets throw Amf0Error', async (t) => {
  const cases: [string, Buffer][] = [
    ['truncated string', Buffer.of(0x02, 0, 50, 0x41)],
    ['truncated number', Buffer.of(0x00, 1, 2)],
    ['unknown marker', Buffer.of(0x42)],
    ['object without end', Buffer.concat([Buffer.of(0x03, 0, 1), Buffer.from('a'), Buffer.of(5)])],
    ['strict array claiming 2^32-1 elements', Buffer.of(0x0a, 0xff, 0xff, 0xff, 0xff, 5)],
    ['long string claiming 4 GB', Buffer.of(0x0c, 0xff, 0xff, 0xff, 0xff)],
    ['nested 10 000 deep', Buffer.concat([Buffer.alloc(10000 * 3, Buffer.of(0x03, 0, 1))])],
    ['AMF3 switch', Buffer.of(0x11, 1)],
  ];
  for (const [what, b] of cases) t.throws(() => decodeAmf0(b), { name: 'Amf0Error' }, what);
});

t.test('FLV video and audio tags', async (t) => {
  const avcSeq = parseVideoTag(Buffer.of(0x17, 0, 0, 0, 0, 1, 2, 3));
  t.match(avcSeq, { codec: 'h264', packet: 'config', key: true });
  t.equal(avcSeq.data.toString('hex'), '010203');
  const nalu = parseVideoTag(Buffer.of(0x27, 1, 0xff, 0xff, 0xd8, 9, 9)); // cts −40
  t.match(nalu, { codec: 'h264', packet: 'frame', key: false, cts: -40 });
  const hevcEx = parseVideoTag(Buffer.concat([Buffer.of(0x90), Buffer.from('hvc1'), Buffer.of(1)]));
  t.match(hevcEx, { codec: 'hevc', packet: 'config', key: true });
  const hevcFrame = parseVideoTag(
    Buffer.concat([Buffer.of(0x91), Buffer.from('hvc1'), Buffer.of(0, 0, 80, 7)]),
  );
  t.match(hevcFrame, { codec: 'hevc', packet: 'frame', key: true, cts: 80 });
  const hevcX = parseVideoTag(Buffer.concat([Buffer.of(0xa3), Buffer.from('hvc1'), Buffer.of(7)]));
  t.match(hevcX, { codec: 'hevc', packet: 'frame', key: false, cts: 0 });
  t.match(parseVideoTag(Buffer.of(0x1c, 0, 0, 0, 0, 1)), { codec: 'hevc', packet: 'config' });
  t.match(parseVideoTag(Buffer.of(0x12, 1, 2)), { codec: null, codecName: 'Sorenson H.263' });
  t.match(parseVideoTag(Buffer.concat([Buffer.of(0x90), Buffer.from('av01'), Buffer.of(1)])), {
    codec: null,
    codecName: 'av01',
  });
  t.throws(() => parseVideoTag(Buffer.of(0x17, 1)), /truncated/);
  t.match(parseAudioTag(Buffer.of(0xaf, 0, 0x12, 0x10)), { codec: 'aac', packet: 'config' });
  t.match(parseAudioTag(Buffer.of(0xaf, 1, 5)), { codec: 'aac', packet: 'frame' });
  t.match(parseAudioTag(Buffer.of(0x2f, 0xff, 0xfb)), { codec: 'mp3', packet: 'frame' });
  t.match(parseAudioTag(Buffer.of(0xbf, 1)), { codec: null, codecName: 'Speex' });
});

/** avcC with one SPS and one PPS, 4-byte lengths. */
const AVCC = Buffer.of(
  1,
  0x42,
  0,
  0x1e,
  0xff,
  0xe1,
  0,
  4,
  0x67,
  0x42,
  0,
  0x1e,
  1,
  0,
  2,
  0x68,
  0xce,
);
const ASC = Buffer.of(0x12, 0x10); // AAC-LC 44.1 kHz stereo

function pesTimes(ts: Buffer): { pid: number; pts: number; dts: number }[] {
  const out: { pid: number; pts: number; dts: number }[] = [];
  for (let i = 0; i + 188 <= ts.length; i += 188) {
    const p = ts.subarray(i, i + 188);
    if (!(p[1]! & 0x40)) continue;
    const pid = ((p[1]! & 0x1f) << 8) | p[2]!;
    let o = 4;
    if (p[3]! & 0x20) o += 1 + p[4]!;
    if (p[o] !== 0 || p[o + 1] !== 0 || p[o + 2] !== 1) continue;
    const flags = p[o + 7]!;
    const rd = (q: number) =>
      ((p[q]! >> 1) & 7) * 2 ** 30 +
      ((p.readUInt16BE(q + 1) >> 1) << 15) +
      (p.readUInt16BE(q + 3) >> 1);
    const pts = rd(o + 9);
    out.push({ pid, pts, dts: flags & 0x40 ? rd(o + 14) : pts });
  }
  return out;
}

t.test(
  'remux: tracks from sequence headers, held until announced tracks exist, times',
  async (t) => {
    const out: Buffer[] = [];
    const r = new FlvRemuxer((b) => out.push(b));
    r.metadata(['onMetaData', { videocodecid: 7, audiocodecid: 10 }]);
    r.videoMessage(0, Buffer.concat([Buffer.of(0x17, 0, 0, 0, 0), AVCC]));
    // A key frame with composition time 80 ms before the audio header: held.
    const idr = Buffer.concat([Buffer.of(0x17, 1, 0, 0, 80), Buffer.of(0, 0, 0, 2, 0x65, 0x88)]);
    r.videoMessage(1000, idr);
    idr.fill(0); // a payload is the caller's after the call (the reader writes it again)
    r.flush();
    t.equal(out.length, 0, 'held until audio is configured');
    r.audioMessage(1000, Buffer.concat([Buffer.of(0xaf, 0), ASC]));
    r.audioMessage(1010, Buffer.of(0xaf, 1, 0x21, 0x10, 0x04));
    r.flush();
    const times = pesTimes(Buffer.concat(out));
    t.same(times, [
      { pid: 0x100, pts: (1000 + 80) * 90, dts: 1000 * 90 },
      { pid: 0x101, pts: 1010 * 90, dts: 1010 * 90 },
    ]);
    t.same(r.counters, { videoFrames: 1, audioFrames: 1, skippedFrames: 0, badTags: 0 });
    t.ok(Buffer.concat(out).includes(Buffer.of(0, 0, 0, 1, 0x65, 0x88)), 'the held frame intact');
    t.equal(r.tracks, 'h264+aac');
    // A codec that cannot be carried is named.
    r.videoMessage(2000, Buffer.of(0x22, 1, 2, 3));
    t.equal(r.lastError, 'codec not supported: Sorenson H.263');
    // Timestamps wrap at 2^32 ms.
    out.length = 0;
    r.audioMessage(0xffffffff - 10, Buffer.of(0xaf, 1, 0x21, 0x10, 0x04));
    r.audioMessage(5, Buffer.of(0xaf, 1, 0x21, 0x10, 0x04));
    r.flush();
    const w = pesTimes(Buffer.concat(out)).map((x) => x.pts);
    t.equal((w[1]! - w[0]! + 2 ** 33) % 2 ** 33, 16 * 90, 'continuous across the 2^32 ms wrap');
  },
);

t.test('remux: HEVC over enhanced RTMP (hvc1) → stream_type 0x24', async (t) => {
  const hvcc = Buffer.alloc(23 + 3 + 2 + 2);
  hvcc[0] = 1;
  hvcc[21] = 0xf3; // 4-byte lengths
  hvcc[22] = 1; // one array: a VPS
  Buffer.of(0x20, 0, 1, 0, 2, 0x40, 0x01).copy(hvcc, 23);
  const out: Buffer[] = [];
  const r = new FlvRemuxer((b) => out.push(b));
  r.videoMessage(0, Buffer.concat([Buffer.of(0x90), Buffer.from('hvc1'), hvcc]));
  const idr = Buffer.of(0, 0, 0, 3, 0x26, 0x01, 0xaf); // IDR_W_RADL
  r.videoMessage(
    40,
    Buffer.concat([Buffer.of(0x91), Buffer.from('hvc1'), Buffer.of(0, 0, 40), idr]),
  );
  r.flush();
  const ts = Buffer.concat(out);
  t.equal(r.tracks, 'hevc');
  t.equal(r.counters.videoFrames, 1);
  // PMT on PID 0x1000: the first elementary stream entry's stream_type.
  let pmtType = -1;
  for (let i = 0; i + 188 <= ts.length; i += 188) {
    const pid = ((ts[i + 1]! & 0x1f) << 8) | ts[i + 2]!;
    if (pid !== 0x1000) continue;
    const sec = i + 5 + ts[i + 4]!;
    const infoLen = ts.readUInt16BE(sec + 10) & 0x0fff;
    pmtType = ts[sec + 12 + infoLen]!;
    break;
  }
  t.equal(pmtType, 0x24, 'HEVC stream_type');
  t.same(pesTimes(ts)[0], { pid: 0x100, pts: 80 * 90, dts: 40 * 90 });
});

t.test(
  'message payloads: small ones share one block, each kept intact, big ones apart',
  async (t) => {
    const w = new ChunkWriter();
    w.chunkSize = 4096;
    const msgs = Array.from({ length: 40 }, (_, i) => ({
      csid: 6 + (i & 1),
      type: i & 1 ? MSG_AUDIO : MSG_VIDEO,
      streamId: 1,
      timestamp: i * 20,
      payload: payload(i === 20 ? SLAB_PIECE_BYTES + 1 : 300 + i * 100, i),
    }));
    const { r, got } = collect();
    r.push(new ChunkWriter().write(setChunkSize(4096)));
    // One read buffer, reused: nothing kept may point into it.
    const read = Buffer.alloc(64 * 1024);
    for (const m of msgs) {
      const b = w.write(m);
      for (let i = 0; i < b.length; i += read.length) {
        const n = b.copy(read, 0, i, i + read.length);
        r.push(read.subarray(0, n));
        read.fill(0);
      }
    }
    const media = got.slice(1);
    t.same(
      media.map((m) => m.payload.toString('hex')),
      msgs.map((m) => m.payload.toString('hex')),
      'every payload kept intact after later messages',
    );
    const blocks = new Set(media.filter((_, i) => i !== 20).map((m) => m.payload.buffer));
    t.ok(blocks.size <= 2, `small payloads from ${blocks.size} block(s), not one each`);
    t.notOk(blocks.has(media[20]!.payload.buffer), 'a payload over the piece size stands alone');
    t.ok(SLAB_BYTES >= 4 * SLAB_PIECE_BYTES);
  },
);

t.test(
  'transient payloads: one block written again, a whole chunk a view, a message in progress kept',
  async (t) => {
    const w = new ChunkWriter();
    w.chunkSize = 4096;
    const msgs = Array.from({ length: 60 }, (_, i) => ({
      csid: 6 + (i & 1),
      type: i & 1 ? MSG_AUDIO : MSG_VIDEO,
      streamId: 1,
      timestamp: i * 20,
      payload: payload(i & 1 ? 300 + i : 5000 + i * 150, i),
    }));
    const seen: string[] = [];
    const blocks = new Set<ArrayBufferLike>();
    let views = 0;
    // One read buffer, reused, in reads of 3000 bytes: messages whole in a read are views of it,
    // the rest assembled in the reader's block.
    const read = Buffer.alloc(3000);
    const r = new ChunkReader(
      (m) => {
        seen.push(m.payload.toString('hex')); // read during the call, as a receiver must
        if (m.payload.buffer === read.buffer) views++;
        else if (m.type !== 1) blocks.add(m.payload.buffer);
      },
      { transient: true },
    );
    r.push(new ChunkWriter().write(setChunkSize(4096)));
    seen.length = 0;
    const bytes = Buffer.concat(msgs.map((m) => w.write(m)));
    for (let i = 0; i < bytes.length; i += read.length) {
      const n = bytes.copy(read, 0, i, i + read.length);
      r.push(read.subarray(0, n));
      read.fill(0);
    }
    t.same(
      seen,
      msgs.map((m) => m.payload.toString('hex')),
      'every payload intact during its call',
    );
    t.ok(views > 10, `${views} messages handed on as views of the read`);
    t.equal(blocks.size, 1, 'the others from one block, written again');

    // Chunk size 128: a video message in three chunks with audio messages completed between
    // them, each audio message pushed a byte at a time (so assembled in the block too): the
    // block is not written again while the video message is in progress.
    const got: string[] = [];
    const r2 = new ChunkReader((m) => got.push(m.payload.toString('hex')), { transient: true });
    const v = payload(300, 1);
    const a1 = payload(20, 2);
    const a2 = payload(30, 3);
    const feed = (b: Buffer) => {
      for (let i = 0; i < b.length; i++) r2.push(b.subarray(i, i + 1));
    };
    feed(chunk(0, 4, [0, 0, 0, 0, 0x01, 0x2c, 9, 1, 0, 0, 0], v.subarray(0, 128)));
    feed(chunk(0, 5, [0, 0, 0, 0, 0, 20, 8, 1, 0, 0, 0], a1));
    feed(chunk(3, 4, [], v.subarray(128, 256)));
    feed(chunk(0, 5, [0, 0, 0, 0, 0, 30, 8, 1, 0, 0, 0], a2));
    feed(chunk(3, 4, [], v.subarray(256)));
    t.same(
      got,
      [a1, a2, v].map((b) => b.toString('hex')),
      'the interleaved message intact',
    );
  },
);
