// The EN 50221 CA PMT built from a PMT, byte for byte: CA descriptors only (programme and
// stream level), empty info loops without a cmd_id, the version and current_next byte, and the
// ASN.1 length field in its short and long forms.
import t from 'tap';
import { buildCaPmt, CMD, LIST, lengthField } from '../../src/dvb/ca-pmt.ts';
import type { Pmt } from '../../src/mpegts/psi.ts';

const hex = (b: Buffer) => b.toString('hex').replace(/(..)/g, '$1 ').trim();
const CA = Buffer.from([0x09, 0x04, 0x0b, 0x00, 0xe6, 0x00]); // CA_system_id 0x0b00, ECM PID 0x0600
const LANG = Buffer.from([0x0a, 0x04, 0x65, 0x6e, 0x67, 0x00]); // ISO 639 "eng": not for the CAM

t.test('length field', async (t) => {
  for (const [n, want] of [
    [0, '00'],
    [127, '7f'],
    [128, '81 80'],
    [300, '82 01 2c'],
  ] as const)
    t.equal(hex(lengthField(n)), want, String(n));
});

t.test('ca_pmt of a programme with programme- and stream-level CA', async (t) => {
  const pmt: Pmt = {
    programNumber: 0x0065,
    version: 3,
    currentNext: true,
    pcrPid: 0x100,
    programInfo: CA,
    streams: [
      { streamType: 0x1b, pid: 0x100, descriptors: Buffer.alloc(0) },
      { streamType: 0x0f, pid: 0x101, descriptors: Buffer.concat([LANG, CA]) },
    ],
  };
  t.equal(
    hex(buildCaPmt(pmt, LIST.only, CMD.okDescrambling)),
    [
      '9f 80 32 1e', // tag, length 30
      '03 00 65 c7', // only, programme 101, version 3, current
      'f0 07 01 09 04 0b 00 e6 00', // programme info: cmd ok_descrambling + the CA descriptor
      '1b e1 00 f0 00', // video: no CA, no cmd_id
      '0f e1 01 f0 07 01 09 04 0b 00 e6 00', // audio: the language descriptor left out
    ].join(' '),
  );
});

t.test('a clear programme, query', async (t) => {
  const pmt: Pmt = {
    programNumber: 0x1234,
    version: 0,
    currentNext: false,
    pcrPid: 0x100,
    programInfo: Buffer.alloc(0),
    streams: [{ streamType: 0x02, pid: 0x1fff, descriptors: LANG }],
  };
  t.equal(
    hex(buildCaPmt(pmt, LIST.first, CMD.query)),
    '9f 80 32 0b 01 12 34 c0 f0 00 02 ff ff f0 00',
  );
});
