// Adapter record → delivery system and DTV property list, table-driven: every delivery system
// with every spec 1 field that applies to it, the defaults, and the records that cannot tune.
import t from 'tap';
import { DTV as D } from '../../src/dvb/api.ts';
import { tuningOf } from '../../src/dvb/tuning.ts';

const AUTO = 0xffffffff;
const UNIVERSAL = { 'lnb-freq1': 9750, 'lnb-freq2': 10600, 'lnb-freq-range': 11700 };

const cases: { name: string; rec: Record<string, unknown>; props: [number, number][] }[] = [
  {
    name: 'DVB-S, defaults: inversion auto, FEC auto',
    rec: { type: 5, freq: 11778, 'symbol-rate': 27500, 'lnb-polarization': 1, ...UNIVERSAL },
    props: [
      [D.FREQUENCY, 1178000],
      [D.INVERSION, 2],
      [D.SYMBOL_RATE, 27500000],
      [D.INNER_FEC, 9],
      [D.DELIVERY_SYSTEM, 5],
      [D.TUNE, 0],
    ],
  },
  {
    name: 'DVB-S2, every field',
    rec: {
      type: 6,
      freq: 11362,
      'symbol-rate': 22000,
      fec: 2,
      modulation: 9,
      'spectral-inversion': 0,
      'dvb-stream-id': 4,
      'lnb-polarization': 0,
      ...UNIVERSAL,
    },
    props: [
      [D.FREQUENCY, 1612000],
      [D.INVERSION, 0],
      [D.SYMBOL_RATE, 22000000],
      [D.INNER_FEC, 2],
      [D.MODULATION, 9],
      [D.PILOT, 2],
      [D.ROLLOFF, 3],
      [D.STREAM_ID, 4],
      [D.DELIVERY_SYSTEM, 6],
      [D.TUNE, 0],
    ],
  },
  {
    name: 'DVB-S2, modulation and stream id not set: QAM_AUTO, no stream filter',
    rec: { type: 6, freq: 11362, 'symbol-rate': 22000, 'lnb-polarization': 0, ...UNIVERSAL },
    props: [
      [D.FREQUENCY, 1612000],
      [D.INVERSION, 2],
      [D.SYMBOL_RATE, 22000000],
      [D.INNER_FEC, 9],
      [D.MODULATION, 6],
      [D.PILOT, 2],
      [D.ROLLOFF, 3],
      [D.STREAM_ID, AUTO],
      [D.DELIVERY_SYSTEM, 6],
      [D.TUNE, 0],
    ],
  },
  {
    name: 'DVB-T, every field',
    rec: {
      type: 3,
      freq: 602000,
      modulation: 3,
      bandwidth: 7000,
      'transmission-mode': 1,
      'guard-interval': 3,
      'hierarchy-information': 0,
      'spectral-inversion': 1,
    },
    props: [
      [D.FREQUENCY, 602000000],
      [D.MODULATION, 3],
      [D.BANDWIDTH_HZ, 7000000],
      [D.INVERSION, 1],
      [D.CODE_RATE_HP, 9],
      [D.CODE_RATE_LP, 9],
      [D.GUARD_INTERVAL, 3],
      [D.TRANSMISSION_MODE, 1],
      [D.HIERARCHY, 0],
      [D.DELIVERY_SYSTEM, 3],
      [D.TUNE, 0],
    ],
  },
  {
    name: 'DVB-T, defaults: 8 MHz, everything automatic',
    rec: { type: 3, freq: 498000 },
    props: [
      [D.FREQUENCY, 498000000],
      [D.MODULATION, 6],
      [D.BANDWIDTH_HZ, 8000000],
      [D.INVERSION, 2],
      [D.CODE_RATE_HP, 9],
      [D.CODE_RATE_LP, 9],
      [D.GUARD_INTERVAL, 4],
      [D.TRANSMISSION_MODE, 2],
      [D.HIERARCHY, 4],
      [D.DELIVERY_SYSTEM, 3],
      [D.TUNE, 0],
    ],
  },
  {
    name: 'DVB-T2 with PLP 1',
    rec: {
      type: 16,
      freq: 602000,
      modulation: 5,
      'transmission-mode': 6,
      'guard-interval': 6,
      'dvb-stream-id': 1,
    },
    props: [
      [D.FREQUENCY, 602000000],
      [D.MODULATION, 5],
      [D.BANDWIDTH_HZ, 8000000],
      [D.INVERSION, 2],
      [D.CODE_RATE_HP, 9],
      [D.CODE_RATE_LP, 9],
      [D.GUARD_INTERVAL, 6],
      [D.TRANSMISSION_MODE, 6],
      [D.HIERARCHY, 4],
      [D.STREAM_ID, 1],
      [D.DELIVERY_SYSTEM, 16],
      [D.TUNE, 0],
    ],
  },
  {
    name: 'DVB-C annex A',
    rec: { type: 1, freq: 346000, 'symbol-rate': 6900, modulation: 5, fec: 0 },
    props: [
      [D.FREQUENCY, 346000000],
      [D.MODULATION, 5],
      [D.INVERSION, 2],
      [D.SYMBOL_RATE, 6900000],
      [D.INNER_FEC, 0],
      [D.DELIVERY_SYSTEM, 1],
      [D.TUNE, 0],
    ],
  },
  {
    name: 'DVB-C annex B: no inversion, symbol rate or FEC (fixed by J.83 B)',
    rec: { type: 2, freq: 573000, 'symbol-rate': 5361, modulation: 5, fec: 3 },
    props: [
      [D.FREQUENCY, 573000000],
      [D.MODULATION, 5],
      [D.DELIVERY_SYSTEM, 2],
      [D.TUNE, 0],
    ],
  },
  {
    name: 'DVB-C annex C',
    rec: { type: 18, freq: 573000, 'symbol-rate': 5274, modulation: 3 },
    props: [
      [D.FREQUENCY, 573000000],
      [D.MODULATION, 3],
      [D.INVERSION, 2],
      [D.SYMBOL_RATE, 5274000],
      [D.INNER_FEC, 9],
      [D.DELIVERY_SYSTEM, 18],
      [D.TUNE, 0],
    ],
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const r = tuningOf({ id: 1, name: 'a', ...c.rec });
    if (!r.ok) return t.fail(r.problem.message);
    t.equal(r.tuning.system, c.rec['type']);
    t.same(r.tuning.props, c.props);
  });
}

const refused: { name: string; rec: Record<string, unknown>; pointer: string; message: string }[] =
  [
    {
      name: 'satellite without polarization',
      rec: { type: 5, freq: 11778, ...UNIVERSAL },
      pointer: '/lnb-polarization',
      message: 'lnb-polarization is not set',
    },
    {
      name: 'polarization -1 is not set',
      rec: { type: 6, freq: 11778, 'lnb-polarization': -1 },
      pointer: '/lnb-polarization',
      message: 'lnb-polarization is not set',
    },
    {
      name: 'no type',
      rec: { freq: 602000 },
      pointer: '/type',
      message: 'type is not set: no delivery system to tune',
    },
    { name: 'no frequency', rec: { type: 3 }, pointer: '/freq', message: 'freq is not set' },
  ];
for (const c of refused) {
  t.test(`refused: ${c.name}`, async (t) => {
    const r = tuningOf({ id: 1, name: 'a', ...c.rec });
    t.same(r, { ok: false, problem: { pointer: c.pointer, message: c.message } });
  });
}
