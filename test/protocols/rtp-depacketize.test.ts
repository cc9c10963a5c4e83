// RTP depacketizers with crafted packets: H.264 single NAL / STAP-A / FU-A into Annex B access
// units (marker and timestamp change close them), a lost FU-A fragment drops the frame and is
// counted, HEVC AP and FU, AAC-hbr AU headers (several AUs per packet, one AU over packets),
// MP2T passed through.
import t from 'tap';
import {
  AacDepacketizer,
  aacParamsOf,
  H264Depacketizer,
  HevcDepacketizer,
  MAX_FRAME_BYTES,
  Mp2tDepacketizer,
  type RtpFrame,
} from '../../src/protocols/rtp/depacketize.ts';
import { parseRtp, type RtpPacket } from '../../src/protocols/rtp/packet.ts';

function pkt(seq: number, ts: number, payload: number[] | Buffer, marker = false): RtpPacket {
  const b = Buffer.alloc(12);
  b[0] = 0x80;
  b[1] = (marker ? 0x80 : 0) | 96;
  b.writeUInt16BE(seq, 2);
  b.writeUInt32BE(ts, 4);
  b.writeUInt32BE(1, 8);
  return parseRtp(Buffer.concat([b, Buffer.from(payload)]))!;
}

const hex = (f: RtpFrame) => f.data.toString('hex');

t.test('H.264: single NAL, STAP-A, FU-A', async (t) => {
  const out: RtpFrame[] = [];
  const d = new H264Depacketizer((f) => out.push(f));
  // STAP-A with SPS (0x67 ..) and PPS (0x68 ..), then an IDR in three FU-A fragments.
  d.push(pkt(1, 1000, [24, 0, 2, 0x67, 0xaa, 0, 2, 0x68, 0xbb]));
  d.push(pkt(2, 1000, [0x7c, 0x85, 1, 2]));
  d.push(pkt(3, 1000, [0x7c, 0x05, 3]));
  d.push(pkt(4, 1000, [0x7c, 0x45, 4], true));
  // A non-IDR slice closed by the next timestamp, not a marker.
  d.push(pkt(5, 4000, [0x41, 9]));
  d.push(pkt(6, 7000, [0x41, 8], true));
  t.equal(out.length, 3);
  t.equal(hex(out[0]!), '0000000167aa0000000168bb000000016501020304');
  t.equal(out[0]!.key, true);
  t.equal(out[0]!.timestamp, 1000);
  t.equal(hex(out[1]!), '000000014109');
  t.equal(out[1]!.key, false);
  t.equal(out[2]!.timestamp, 7000);
  t.match(d.stats, { packets: 6, frames: 3, lost: 0, dropped: 0 });
});

t.test('H.264: a lost FU-A fragment drops the frame and is counted', async (t) => {
  const out: RtpFrame[] = [];
  const d = new H264Depacketizer((f) => out.push(f));
  d.push(pkt(10, 1, [0x7c, 0x85, 1]));
  // seq 11 lost
  d.push(pkt(12, 1, [0x7c, 0x45, 3], true));
  d.push(pkt(13, 2, [0x41, 7], true));
  t.equal(out.length, 1);
  t.equal(hex(out[0]!), '000000014107');
  t.match(d.stats, { lost: 1, dropped: 1, frames: 1 });
  // An end fragment whose start never came (first packet of the stream) is dropped too.
  const e = new H264Depacketizer((f) => out.push(f));
  e.push(pkt(1, 5, [0x7c, 0x45, 3], true));
  t.match(e.stats, { dropped: 1, frames: 0 });
  // Duplicates are ignored.
  e.push(pkt(2, 6, [0x41, 1], true));
  e.push(pkt(2, 6, [0x41, 1], true));
  t.match(e.stats, { frames: 1 });
});

t.test('H.264: an access unit past MAX_FRAME_BYTES is not held, and is dropped', async (t) => {
  const out: RtpFrame[] = [];
  const d = new H264Depacketizer((f) => out.push(f));
  const chunk = Buffer.alloc(60_000, 1);
  const n = Math.ceil(MAX_FRAME_BYTES / chunk.length) + 10;
  let most = 0;
  d.push(pkt(0, 1, Buffer.concat([Buffer.from([0x7c, 0x85]), chunk])));
  for (let i = 1; i < n; i++) {
    d.push(pkt(i, 1, Buffer.concat([Buffer.from([0x7c, 0x05]), chunk])));
    most = Math.max(most, d.holding);
  }
  d.push(pkt(n, 1, [0x7c, 0x45, 1], true));
  // Single NAL units of one timestamp without a marker, likewise.
  for (let i = 0; i < n; i++) {
    d.push(pkt(n + 1 + i, 2, Buffer.concat([Buffer.from([0x41]), chunk])));
    most = Math.max(most, d.holding);
  }
  t.ok(most <= MAX_FRAME_BYTES, `held at most ${most} bytes`);
  d.push(pkt(2 * n + 1, 3, [0x41, 1], true));
  t.equal(out.length, 1, 'only the small frame');
  t.match(d.stats, { dropped: 2, lost: 0 });
});

t.test('HEVC: AP and FU', async (t) => {
  const out: RtpFrame[] = [];
  const d = new HevcDepacketizer((f) => out.push(f));
  // AP (type 48: 0x60 0x01) with VPS (0x40 0x01 ..) and SPS (0x42 0x01 ..).
  d.push(pkt(1, 90, [0x60, 0x01, 0, 3, 0x40, 0x01, 0xa, 0, 3, 0x42, 0x01, 0xb]));
  // FU (type 49: 0x62 0x01) of an IDR_W_RADL (19): start, end.
  d.push(pkt(2, 90, [0x62, 0x01, 0x80 | 19, 1, 2]));
  d.push(pkt(3, 90, [0x62, 0x01, 0x40 | 19, 3], true));
  t.equal(out.length, 1);
  t.equal(hex(out[0]!), '0000000140010a0000000142010b00000001260101020' + '3');
  t.equal(out[0]!.key, true);
});

t.test('AAC-hbr', async (t) => {
  const params = aacParamsOf({ sizelength: '13', indexlength: '3', indexdeltalength: '3' })!;
  t.same(params, { sizeLength: 13, indexLength: 3, indexDeltaLength: 3, frameSamples: 1024 });
  t.equal(aacParamsOf({ sizelength: '13', ctsdeltalength: '2' }), undefined);
  const out: RtpFrame[] = [];
  const d = new AacDepacketizer(params, (f) => out.push(f));
  // Two AUs of 2 and 3 bytes: AU-headers-length 32 bits, headers (size << 3).
  const h = (size: number) => [(size << 3) >> 8, (size << 3) & 0xff];
  d.push(pkt(1, 48000, [0, 32, ...h(2), ...h(3), 1, 2, 3, 4, 5], true));
  t.equal(out.length, 2);
  t.equal(hex(out[0]!), '0102');
  t.equal(out[1]!.timestamp, 48000 + 1024);
  t.equal(hex(out[1]!), '030405');
  // One AU of 5 bytes over two packets.
  d.push(pkt(2, 50048, [0, 16, ...h(5), 9, 8, 7]));
  d.push(pkt(3, 50048, [0, 16, ...h(5), 6, 5], true));
  t.equal(out.length, 3);
  t.equal(hex(out[2]!), '0908070605');
  // A fragment lost: the AU is dropped.
  d.push(pkt(4, 51072, [0, 16, ...h(5), 9, 8, 7]));
  d.push(pkt(6, 51072, [0, 16, ...h(5), 6, 5], true));
  t.equal(out.length, 3);
  t.match(d.stats, { lost: 1, dropped: 1 });
  // A forged AU-headers-length past the packet is dropped, not read past the end.
  d.push(pkt(7, 52096, [0xff, 0xff, 1]));
  t.equal(out.length, 3);
});

t.test('MP2T', async (t) => {
  const out: RtpFrame[] = [];
  const d = new Mp2tDepacketizer((f) => out.push(f));
  const ts = Buffer.alloc(376, 0xff);
  ts[0] = 0x47;
  ts[188] = 0x47;
  d.push(pkt(1, 0, ts));
  d.push(pkt(2, 0, [0x47, 1, 2]));
  t.equal(out.length, 1);
  t.equal(out[0]!.data.length, 376);
  t.match(d.stats, { frames: 1, dropped: 1 });
});
