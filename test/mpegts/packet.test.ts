// Packet header accessors on hand-written packet bytes, the null packet, and the discontinuity
// marking that inserts an adaptation field without losing payload bytes.
import t from 'tap';
import {
  cc,
  hasAdaptation,
  hasPayload,
  markDiscontinuity,
  NULL_PID,
  nullPacket,
  payloadOffset,
  pid,
  pusi,
  randomAccess,
  SYNC_BYTE,
  setCc,
  TS_PACKET_SIZE,
} from '../../src/mpegts/packet.ts';

/** A packet from its first bytes (hex, spaces allowed), the rest filled with `fill`. */
function packetOf(head: string, fill = 0xaa): Buffer {
  const p = Buffer.alloc(TS_PACKET_SIZE, fill);
  Buffer.from(head.replaceAll(' ', ''), 'hex').copy(p);
  return p;
}

t.test('constants', async (t) => {
  t.equal(TS_PACKET_SIZE, 188);
  t.equal(SYNC_BYTE, 0x47);
  t.equal(NULL_PID, 0x1fff);
});

t.test('header fields of a payload-only packet', async (t) => {
  const p = packetOf('47 41 00 1a');
  t.equal(pid(p), 0x100);
  t.equal(pusi(p), true);
  t.equal(cc(p), 10);
  t.equal(hasPayload(p), true);
  t.equal(hasAdaptation(p), false);
  t.equal(payloadOffset(p), 4);
  t.equal(randomAccess(p), false);
  const q = packetOf('47 1f fe 1f');
  t.equal(pid(q), 0x1ffe);
  t.equal(pusi(q), false);
  t.equal(cc(q), 15);
});

t.test('adaptation field: payload offset and random_access_indicator', async (t) => {
  const p = packetOf('47 01 01 35 07 50');
  t.equal(hasAdaptation(p), true);
  t.equal(hasPayload(p), true);
  t.equal(payloadOffset(p), 4 + 1 + 7);
  t.equal(randomAccess(p), true);
  const onlyAf = packetOf('47 01 01 20 b7 00');
  t.equal(hasPayload(onlyAf), false);
  t.equal(randomAccess(onlyAf), false);
  const emptyAf = packetOf('47 01 01 30 00 40');
  t.equal(randomAccess(emptyAf), false, 'a zero-length adaptation field has no flags byte');
});

t.test('accessors read at an offset; setCc changes only the counter', async (t) => {
  const two = Buffer.concat([nullPacket(), packetOf('47 40 20 d5')]);
  t.equal(pid(two, TS_PACKET_SIZE), 0x20);
  t.equal(cc(two, TS_PACKET_SIZE), 5);
  setCc(two, TS_PACKET_SIZE, 0x13);
  t.equal(two.subarray(TS_PACKET_SIZE, TS_PACKET_SIZE + 4).toString('hex'), '474020d3');
});

t.test('the null packet', async (t) => {
  const p = nullPacket();
  t.equal(p.length, TS_PACKET_SIZE);
  t.equal(p.subarray(0, 4).toString('hex'), '471fff10');
  t.ok(p.subarray(4).every((b) => b === 0xff));
});

t.test('markDiscontinuity sets the flag in an adaptation field that has one', async (t) => {
  const p = packetOf('47 01 00 33 07 10');
  const out = markDiscontinuity(p, 0);
  t.equal(out.length, TS_PACKET_SIZE);
  t.equal(out[5], 0x90);
  t.same(out.subarray(6), p.subarray(6));
  t.equal(p[5], 0x10, 'the input is left as it was');
});

t.test('markDiscontinuity without an adaptation field: two packets, no byte lost', async (t) => {
  const payload = Buffer.alloc(184);
  for (let i = 0; i < payload.length; i++) payload[i] = i;
  const p = Buffer.concat([Buffer.from('47410019', 'hex'), payload]);
  const out = markDiscontinuity(p, 0);
  t.equal(out.length, 2 * TS_PACKET_SIZE);
  t.equal(out.subarray(0, 6).toString('hex'), '474100390180', 'AF of 1 byte: discontinuity');
  t.same(out.subarray(6, TS_PACKET_SIZE), payload.subarray(0, 182));
  const carry = out.subarray(TS_PACKET_SIZE);
  t.equal(carry.subarray(0, 4).toString('hex'), '4701003a', 'same PID, no PUSI, next CC');
  t.equal(carry[4], 183 - 2, 'stuffing up to the two displaced bytes');
  t.same(carry.subarray(TS_PACKET_SIZE - 2), payload.subarray(182));
});
