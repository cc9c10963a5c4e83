// EN 50221 CA PMT (8.4.3.4): the programme a CAM is asked to descramble, built from its PMT —
// the first piece of the CAM support (issue 22 step 5; the session stack and the ca device are
// still to come). Pure; only CA descriptors (tag 0x09) are passed to the CAM.
import { type Pmt, parseDescriptors } from '../mpegts/psi.ts';

/** apdu_tag of ca_pmt. */
export const CA_PMT_TAG = 0x9f8032;
/** ca_pmt_list_management: this programme alone (3), or first / more / last of a list, add,
 *  update (Table 28). */
export const LIST = { more: 0, first: 1, last: 2, only: 3, add: 4, update: 5 } as const;
/** ca_pmt_cmd_id (Table 29). */
export const CMD = { okDescrambling: 1, okMmi: 2, query: 3, notSelected: 4 } as const;

const DESCRIPTOR_CA = 0x09;
const LENGTH_ONE_BYTE_MAX = 0x7f;
const LENGTH_LONG_FORM = 0x80;

/** ASN.1 BER length_field (8.3.1): one byte below 128, else 0x80 | n and n bytes. */
export function lengthField(n: number): Buffer {
  if (n <= LENGTH_ONE_BYTE_MAX) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([LENGTH_LONG_FORM | bytes.length, ...bytes]);
}

/** The CA descriptors of a loop, whole (tag, length, body). */
function caDescriptors(loop: Buffer): Buffer {
  return Buffer.concat(
    parseDescriptors(loop)
      .filter((d) => d.tag === DESCRIPTOR_CA)
      .map((d) => Buffer.concat([Buffer.from([DESCRIPTOR_CA, d.data.length]), d.data])),
  );
}

/** A CA info loop: ca_pmt_cmd_id and the descriptors, or nothing when there are none. */
function infoLoop(loop: Buffer, cmd: number): Buffer {
  const ca = caDescriptors(loop);
  const body = ca.length ? Buffer.concat([Buffer.from([cmd]), ca]) : Buffer.alloc(0);
  return Buffer.concat([Buffer.from([0xf0 | (body.length >> 8), body.length & 0xff]), body]);
}

/** The whole ca_pmt APDU (tag, length, body) for `pmt`. */
export function buildCaPmt(pmt: Pmt, list: number, cmd: number): Buffer {
  const head = Buffer.from([
    list,
    pmt.programNumber >> 8,
    pmt.programNumber & 0xff,
    0xc0 | ((pmt.version & 0x1f) << 1) | (pmt.currentNext ? 1 : 0),
  ]);
  const streams = pmt.streams.map((s) =>
    Buffer.concat([
      Buffer.from([s.streamType, 0xe0 | (s.pid >> 8), s.pid & 0xff]),
      infoLoop(s.descriptors, cmd),
    ]),
  );
  const body = Buffer.concat([head, infoLoop(pmt.programInfo, cmd), ...streams]);
  const tag = Buffer.from([CA_PMT_TAG >> 16, (CA_PMT_TAG >> 8) & 0xff, CA_PMT_TAG & 0xff]);
  return Buffer.concat([tag, lengthField(body.length), body]);
}
