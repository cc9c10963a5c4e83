// Null packets for bitrate-mode 2/3 stuffing, n at a time. Not hot (a few calls per second per
// output), so plain TS. The constant-rate pacing itself is src/mpegts/pacer.ts.
import { nullPacket, TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { argError } from './errors.ts';

const TEMPLATE_PACKETS = 64;

function makeNulls(n: number): Buffer {
  const one = nullPacket();
  const b = Buffer.allocUnsafe(n * TS_PACKET_SIZE);
  for (let i = 0; i < n; i++) one.copy(b, i * TS_PACKET_SIZE);
  return b;
}

const template = makeNulls(TEMPLATE_PACKETS);

/** `n` null packets (PID 0x1FFF), a fresh Buffer the caller may keep or modify. */
export function nullPackets(n: number): Buffer {
  if (!Number.isInteger(n) || n < 0 || n > 1_000_000) throw argError('n must be 0..1000000');
  if (n <= TEMPLATE_PACKETS) return Buffer.from(template.subarray(0, n * TS_PACKET_SIZE));
  return makeNulls(n);
}
