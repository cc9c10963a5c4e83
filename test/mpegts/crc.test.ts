// CRC-32/MPEG-2 against known vectors: the catalogue check value, and the CRC_32 of PSI
// sections as real muxers write them (a whole section, CRC included, sums to 0).
import t from 'tap';
import { CRC32_INITIAL, crc32, crc32Update } from '../../src/mpegts/crc.ts';

/** The PAT ffmpeg writes by default (transport_stream_id 1, programme 1 → PMT PID 0x1000). */
const FFMPEG_PAT = Buffer.from('00b00d0001c100000001f0002ab104b2', 'hex');

t.test('check values', async (t) => {
  t.equal(crc32(Buffer.from('123456789', 'latin1')), 0x0376e6e7, 'CRC-32/MPEG-2 check value');
  t.equal(crc32(Buffer.alloc(0)), 0xffffffff, 'no bytes: the initial value, no final XOR');
  t.equal(crc32(Buffer.from([0])), 0x4e08bfb4);
  t.equal(crc32(Buffer.alloc(4, 0xff)), 0, 'four 0xFF bytes cancel the initial value');
});

t.test('a real PAT section: its CRC_32 field, and the whole section summing to 0', async (t) => {
  const body = FFMPEG_PAT.subarray(0, FFMPEG_PAT.length - 4);
  t.equal(crc32(body), 0x2ab104b2);
  t.equal(crc32(FFMPEG_PAT), 0);
});

t.test('a range of a buffer, and byte by byte, give the same CRC', async (t) => {
  const padded = Buffer.concat([Buffer.from([1, 2, 3]), FFMPEG_PAT, Buffer.from([9])]);
  t.equal(crc32(padded, 3, 3 + FFMPEG_PAT.length), 0);
  let running = CRC32_INITIAL;
  for (const b of FFMPEG_PAT.subarray(0, FFMPEG_PAT.length - 4)) running = crc32Update(running, b);
  t.equal(running, 0x2ab104b2);
});
