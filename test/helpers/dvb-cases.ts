// The channels the DVB tests tune, each as a spec 1 adapter record and as the same channel in
// libdvbv5's DVBV5 channel-file format (with its LNB name and satellite number), plus the reading
// of a fake-device log into the steps and property list of the tuning it records.
import { DTV } from '../../src/dvb/api.ts';
import type { SecStep } from '../../src/dvb/lnb.ts';
import type { FakeEntry } from './fake-dvb.ts';

export interface DvbCase {
  name: string;
  rec: Record<string, unknown>;
  /** dvbv5-zap's `-l` LNB matching the record's oscillators (satellite only). */
  lnbf?: string;
  /** The frontend's delivery systems (its first is the one it starts in). */
  delsys: number[];
}

const UNIVERSAL = { 'lnb-freq1': 9750, 'lnb-freq2': 10600, 'lnb-freq-range': 11700 };
const SAT = [6, 5];
const TER = [16, 3];
const CAB = [1, 18, 2];

/** Acceptance cases of issue 22: each delivery system, and the LNB cases. */
export const CASES: DvbCase[] = [
  {
    name: 'DVB-S, universal LNB high band, vertical',
    lnbf: 'EXTENDED',
    delsys: SAT,
    rec: {
      type: 5,
      freq: 11778,
      'symbol-rate': 27500,
      fec: 3,
      'lnb-polarization': 1,
      ...UNIVERSAL,
    },
  },
  {
    name: 'DVB-S2, universal LNB low band, horizontal, ISI 4, every field',
    lnbf: 'EXTENDED',
    delsys: SAT,
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
  },
  {
    name: 'DVB-S2, defaults (modulation not set, any input stream)',
    lnbf: 'EXTENDED',
    delsys: SAT,
    rec: { type: 6, freq: 12188, 'symbol-rate': 27500, 'lnb-polarization': 0, ...UNIVERSAL },
  },
  {
    name: 'single band LNB (10000 MHz), vertical',
    lnbf: 'STANDARD',
    delsys: SAT,
    rec: { type: 5, freq: 11362, 'symbol-rate': 22000, 'lnb-polarization': 1, 'lnb-freq1': 10000 },
  },
  {
    name: 'forced tone (oscillator 11250 MHz; libdvbv5: QPH031 upper range)',
    lnbf: 'QPH031',
    delsys: SAT,
    rec: {
      type: 6,
      freq: 12300,
      'symbol-rate': 22000,
      'lnb-polarization': 1,
      'lnb-freq1': 11250,
      'lnb-force-tone': true,
    },
  },
  {
    name: 'DiSEqC port 1, low band, horizontal',
    lnbf: 'EXTENDED',
    delsys: SAT,
    rec: {
      type: 6,
      freq: 11362,
      'symbol-rate': 22000,
      'lnb-polarization': 0,
      'lnb-diseqc': 1,
      ...UNIVERSAL,
    },
  },
  {
    name: 'DiSEqC port 2, high band, vertical',
    lnbf: 'EXTENDED',
    delsys: SAT,
    rec: {
      type: 6,
      freq: 11778,
      'symbol-rate': 22000,
      'lnb-polarization': 1,
      'lnb-diseqc': 2,
      ...UNIVERSAL,
    },
  },
  {
    name: 'DiSEqC port 3, high band, horizontal',
    lnbf: 'EXTENDED',
    delsys: SAT,
    rec: {
      type: 6,
      freq: 11778,
      'symbol-rate': 22000,
      'lnb-polarization': 0,
      'lnb-diseqc': 3,
      ...UNIVERSAL,
    },
  },
  {
    name: 'DiSEqC port 4, low band, vertical',
    lnbf: 'EXTENDED',
    delsys: SAT,
    rec: {
      type: 5,
      freq: 10920,
      'symbol-rate': 22000,
      'lnb-polarization': 1,
      'lnb-diseqc': 4,
      ...UNIVERSAL,
    },
  },
  {
    name: 'DVB-T, every field',
    delsys: TER.slice().reverse(),
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
  },
  { name: 'DVB-T, defaults', delsys: TER.slice().reverse(), rec: { type: 3, freq: 498000 } },
  {
    name: 'DVB-T2, PLP 1, 32K, 19/128',
    delsys: TER,
    rec: {
      type: 16,
      freq: 602000,
      modulation: 5,
      'transmission-mode': 6,
      'guard-interval': 6,
      'dvb-stream-id': 1,
    },
  },
  {
    name: 'DVB-T2, defaults (any PLP)',
    delsys: TER,
    rec: { type: 16, freq: 690000, bandwidth: 6000 },
  },
  {
    name: 'DVB-C annex A',
    delsys: CAB,
    rec: { type: 1, freq: 346000, 'symbol-rate': 6900, modulation: 5, fec: 0 },
  },
  { name: 'DVB-C annex B', delsys: [2, 1], rec: { type: 2, freq: 573000, modulation: 5 } },
  {
    name: 'DVB-C annex C',
    delsys: [18, 1],
    rec: { type: 18, freq: 573000, 'symbol-rate': 5274, modulation: 3 },
  },
];

const SYSTEM = {
  1: 'DVBC/ANNEX_A',
  2: 'DVBC/ANNEX_B',
  3: 'DVBT',
  5: 'DVBS',
  6: 'DVBS2',
  16: 'DVBT2',
  18: 'DVBC/ANNEX_C',
} as Record<number, string>;
const FEC = [
  'NONE',
  '1/2',
  '2/3',
  '3/4',
  '4/5',
  '5/6',
  '6/7',
  '7/8',
  '8/9',
  'AUTO',
  '3/5',
  '9/10',
  '2/5',
];
const MODULATION = [
  'QPSK',
  'QAM/16',
  'QAM/32',
  'QAM/64',
  'QAM/128',
  'QAM/256',
  'QAM/AUTO',
  'VSB/8',
  'VSB/16',
  'PSK/8',
  'APSK/16',
  'APSK/32',
  'DQPSK',
  'QAM/4_NR',
];
const INVERSION = ['OFF', 'ON', 'AUTO'];
const TRANSMISSION = ['2K', '8K', 'AUTO', '4K', '1K', '16K', '32K', 'C1', 'C3780'];
const GUARD = [
  '1/32',
  '1/16',
  '1/8',
  '1/4',
  'AUTO',
  '1/128',
  '19/128',
  '19/256',
  'PN420',
  'PN595',
  'PN945',
];
const HIERARCHY = ['NONE', '1', '2', '4', 'AUTO'];
/** The kernel's DTV_STREAM_ID "no filter", written out for libdvbv5 to pass on. */
const NO_STREAM_ID_FILTER = 4294967295;

/** The record as a DVBV5 channel file: spec defaults written out, fields the record has no
 *  member for (pilot, roll-off, LP code rate) as AUTO. */
export function channelFile(rec: Record<string, unknown>): string {
  const n = (k: string, d: number) => (rec[k] as number | undefined) ?? d;
  const type = n('type', 0);
  const sat = type === 5 || type === 6;
  const lines: string[] = ['SERVICE_ID = 101', `DELIVERY_SYSTEM = ${SYSTEM[type]}`];
  lines.push(`FREQUENCY = ${n('freq', 0) * 1000}`);
  const mod = n('modulation', -1);
  lines.push(`MODULATION = ${mod === -1 ? 'QAM/AUTO' : MODULATION[mod]}`);
  lines.push(`INVERSION = ${INVERSION[n('spectral-inversion', 2)]}`);
  const sid = n('dvb-stream-id', -1);
  if (sat) {
    lines.push(`POLARIZATION = ${n('lnb-polarization', -1) === 0 ? 'HORIZONTAL' : 'VERTICAL'}`);
    lines.push('PILOT = AUTO', 'ROLLOFF = AUTO');
  }
  if (sat || type === 16) lines.push(`STREAM_ID = ${sid === -1 ? NO_STREAM_ID_FILTER : sid}`);
  if (sat || type === 1 || type === 2 || type === 18) {
    lines.push(`SYMBOL_RATE = ${n('symbol-rate', 0) * 1000}`, `INNER_FEC = ${FEC[n('fec', 9)]}`);
  }
  if (type === 3 || type === 16) {
    lines.push(
      `BANDWIDTH_HZ = ${n('bandwidth', 8000) * 1000}`,
      'CODE_RATE_HP = AUTO',
      'CODE_RATE_LP = AUTO',
    );
    lines.push(`TRANSMISSION_MODE = ${TRANSMISSION[n('transmission-mode', 2)]}`);
    lines.push(
      `GUARD_INTERVAL = ${GUARD[n('guard-interval', 4)]}`,
      `HIERARCHY = ${HIERARCHY[n('hierarchy-information', 4)]}`,
    );
  }
  return `[chan]\n${lines.map((l) => `\t${l}\n`).join('')}`;
}

/** dvbv5-zap's arguments for the case: the LNB and, for a switch port, the satellite number. */
export function zapArgs(c: DvbCase): string[] {
  const port = (c.rec['lnb-diseqc'] as number | undefined) ?? 0;
  return [...(c.lnbf ? ['-l', c.lnbf] : []), ...(port > 0 ? ['-S', String(port - 1)] : [])];
}

export interface RecordedTuning {
  sec: SecStep[];
  props: [number, number][];
}

/** The last tuning in a fake-device log: the control steps since the frontend was opened and
 *  the FE_SET_PROPERTY that ends in DTV_TUNE (whose value, unused by the kernel, reads 0). */
export function recordedTuning(entries: FakeEntry[]): RecordedTuning | undefined {
  const at = entries.findLastIndex(
    (e) => e.op === 'FE_SET_PROPERTY' && e.props?.some(([c]) => c === DTV.TUNE),
  );
  if (at < 0) return undefined;
  const from = entries.findLastIndex(
    (e, i) => i < at && e.op === 'open' && /frontend/.test(e.path ?? ''),
  );
  const sec: SecStep[] = [];
  for (const e of entries.slice(from + 1, at)) {
    if (e.op === 'FE_SET_VOLTAGE') sec.push({ op: 'voltage', value: e.v! });
    else if (e.op === 'FE_SET_TONE') sec.push({ op: 'tone', value: e.v! });
    else if (e.op === 'FE_DISEQC_SEND_BURST') sec.push({ op: 'burst', value: e.v! });
    else if (e.op === 'FE_DISEQC_SEND_MASTER_CMD')
      sec.push({ op: 'diseqc', msg: e.msg!.split(' ').map((h) => Number.parseInt(h, 16)) });
  }
  const props = entries[at]!.props!.map(
    ([c, v]) => [c, c === DTV.TUNE ? 0 : v] as [number, number],
  );
  return { sec, props };
}
