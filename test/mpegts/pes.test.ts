// PES header reading on hand-written headers: start code, PES_packet_length, payload offset,
// PTS/DTS flags, and 33-bit timestamps (the test helper's writer, and the top bit set).
import t from 'tap';
import {
  isPesStart,
  PES_DTS_OFFSET,
  PES_PTS_DTS_FLAGS,
  PES_PTS_FLAG,
  PES_PTS_OFFSET,
  pesPacketLength,
  pesPayloadOffset,
  pesTimestampFlags,
  readTimestamp,
} from '../../src/mpegts/pes.ts';
import { putPts } from '../helpers/ts-craft.ts';

const hex = (s: string) => Buffer.from(s.replaceAll(' ', ''), 'hex');

t.test('a video PES header with PTS and DTS', async (t) => {
  // 00 00 01 E0, unbounded length, '10' marker, PTS_DTS '11', 10 bytes of PTS + DTS (by hand).
  const h = hex('000001e0 0000 80 c0 0a 3100377741 1100375b21 aabb');
  t.ok(isPesStart(h));
  t.equal(pesPacketLength(h), 0);
  t.equal(pesPayloadOffset(h), 19);
  t.equal(pesTimestampFlags(h), PES_PTS_DTS_FLAGS);
  t.equal(readTimestamp(h, PES_PTS_OFFSET), 900_000, 'PTS 10 s');
  t.equal(readTimestamp(h, PES_DTS_OFFSET), 896_400, 'DTS 40 ms earlier');
});

t.test('an audio PES header with PTS only', async (t) => {
  const h = Buffer.concat([hex('000001c0 0123 81 80 05'), Buffer.alloc(5), hex('ff')]);
  putPts(h, PES_PTS_OFFSET, 2 ** 33 - 1);
  t.equal(pesPacketLength(h), 0x123);
  t.equal(pesTimestampFlags(h), PES_PTS_FLAG);
  t.equal(pesPayloadOffset(h), 14);
  t.equal(readTimestamp(h, PES_PTS_OFFSET), 2 ** 33 - 1, 'all 33 bits');
  putPts(h, PES_PTS_OFFSET, 90_000 * 3600);
  t.equal(readTimestamp(h, PES_PTS_OFFSET), 90_000 * 3600);
});

t.test('no start code', async (t) => {
  t.notOk(isPesStart(hex('000002e0')));
  t.notOk(isPesStart(hex('47000001'), 0));
  t.ok(isPesStart(hex('47000001'), 1));
});
