// NIT delivery system descriptors (EN 300 468 6.2.13) → the tuning members of a spec 1 adapter
// record, so a scan can follow a network to its other transponders: satellite (0x43), cable
// (0x44) and terrestrial (0x5A).
import { parseDescriptors } from '../mpegts/psi.ts';
import { SYS } from './api.ts';

export const DESCRIPTOR_SATELLITE = 0x43;
export const DESCRIPTOR_CABLE = 0x44;
export const DESCRIPTOR_TERRESTRIAL = 0x5a;

/** The members of an adapter record that say where a transponder is. */
export interface TransponderTuning {
  type: number;
  /** MHz for satellite, kHz for cable and terrestrial (spec 1's units). */
  freq: number;
  'symbol-rate'?: number;
  fec?: number;
  modulation?: number;
  'lnb-polarization'?: number;
  bandwidth?: number;
  'guard-interval'?: number;
  'transmission-mode'?: number;
  'hierarchy-information'?: number;
  /** Terrestrial code rates from the NIT (kernel `fe_code_rate`); spec 1 has no member for
   *  them, a record tunes them automatically. libdvbv5 sends them when it follows a NIT. */
  codeRateHp?: number;
  codeRateLp?: number;
  /** DVB-S2 roll-off from the NIT (kernel `fe_rolloff`); likewise sent as libdvbv5 does. */
  rollOff?: number;
}

/** A BCD number of `digits` digits starting at the high nibble of `data[at]`. */
function bcd(data: Buffer, at: number, digits: number): number {
  let v = 0;
  for (let i = 0; i < digits; i++) {
    const byte = data[at + (i >> 1)]!;
    v = v * 10 + ((i & 1) === 0 ? byte >> 4 : byte & 0x0f);
  }
  return v;
}

/** FEC_inner (Table 35) → spec 1's `fec`; undefined for the reserved codes. */
const FEC_INNER: Record<number, number> = {
  0: 9,
  1: 1,
  2: 2,
  3: 3,
  4: 5,
  5: 7,
  6: 8,
  7: 10,
  8: 4,
  9: 11,
  15: 0,
};
/** Cable modulation (Table 36) → spec 1's `modulation` (1 16-QAM … 5 256-QAM). */
const CABLE_MODULATION: Record<number, number> = { 1: 1, 2: 2, 3: 3, 4: 4, 5: 5 };
/** Satellite modulation_type (00 auto, 01 QPSK, 10 8PSK, 11 16-QAM) → spec 1's `modulation`. */
const SAT_MODULATION = [6, 0, 9, 1];
/** Satellite roll_off (0.35, 0.25, 0.20) → the kernel's ROLLOFF_35, ROLLOFF_25, ROLLOFF_20. */
const ROLL_OFF = [0, 2, 1];
/** Terrestrial bandwidth (Table 42: 8, 7, 6, 5 MHz) in kHz. */
const BANDWIDTH_KHZ = [8000, 7000, 6000, 5000];
/** Terrestrial constellation (QPSK, 16-QAM, 64-QAM) → spec 1's `modulation`. */
const CONSTELLATION = [0, 1, 3];
/** Terrestrial code_rate (Table 45: 1/2, 2/3, 3/4, 5/6, 7/8) → the kernel's `fe_code_rate`. */
const CODE_RATE = [1, 2, 3, 5, 7];
/** 10 Hz units (terrestrial centre_frequency) per kHz. */
const TEN_HZ_PER_KHZ = 100;

function satellite(d: Buffer): TransponderTuning | undefined {
  if (d.length < 11) return undefined;
  const s2 = (d[6]! & 0x04) !== 0;
  const pol = (d[6]! >> 5) & 0x03; // 0 horizontal, 1 vertical, 2 left, 3 right
  return {
    type: s2 ? SYS.DVBS2 : SYS.DVBS,
    freq: Math.round(bcd(d, 0, 8) / 100), // 10 kHz units → MHz
    'symbol-rate': Math.round(bcd(d, 7, 7) / 10), // 100 sym/s units → ksym/s
    ...(FEC_INNER[d[10]! & 0x0f] !== undefined ? { fec: FEC_INNER[d[10]! & 0x0f] } : {}),
    ...(s2 ? { modulation: SAT_MODULATION[d[6]! & 0x03] } : {}),
    ...(s2 && ROLL_OFF[(d[6]! >> 3) & 0x03] !== undefined
      ? { rollOff: ROLL_OFF[(d[6]! >> 3) & 0x03] }
      : {}),
    // Circular polarization switches like linear: left as horizontal (18 V), right as vertical.
    'lnb-polarization': pol === 0 || pol === 2 ? 0 : 1,
  };
}

function cable(d: Buffer, type: number): TransponderTuning | undefined {
  if (d.length < 11) return undefined;
  const modulation = CABLE_MODULATION[d[6]!];
  return {
    type,
    freq: Math.round(bcd(d, 0, 8) / 10), // 100 Hz units → kHz
    'symbol-rate': Math.round(bcd(d, 7, 7) / 10),
    ...(FEC_INNER[d[10]! & 0x0f] !== undefined ? { fec: FEC_INNER[d[10]! & 0x0f] } : {}),
    ...(modulation !== undefined ? { modulation } : {}),
  };
}

function terrestrial(d: Buffer, type: number): TransponderTuning | undefined {
  if (d.length < 11) return undefined;
  const constellation = d[5]! >> 6;
  const hierarchy = (d[5]! >> 3) & 0x03; // the alpha; bit 2 is the native/in-depth interleaver
  const guard = (d[6]! >> 3) & 0x03;
  const mode = (d[6]! >> 1) & 0x03;
  return {
    type,
    freq: Math.round(d.readUInt32BE(0) / TEN_HZ_PER_KHZ),
    bandwidth: BANDWIDTH_KHZ[d[4]! >> 5] ?? 8000,
    ...(constellation < 3 ? { modulation: CONSTELLATION[constellation] } : {}),
    'hierarchy-information': hierarchy,
    'guard-interval': guard,
    // 2k, 8k, 4k are spec 1's (and the kernel's) 0, 1, 3
    ...(mode < 3 ? { 'transmission-mode': [0, 1, 3][mode] } : {}),
    ...(CODE_RATE[d[5]! & 0x07] !== undefined ? { codeRateHp: CODE_RATE[d[5]! & 0x07] } : {}),
    ...(CODE_RATE[d[6]! >> 5] !== undefined ? { codeRateLp: CODE_RATE[d[6]! >> 5] } : {}),
  };
}

/** The transponder a NIT transport_descriptors loop describes, for a frontend of `system`'s
 *  family (a DVB-T adapter follows terrestrial descriptors as DVB-T, and so on). */
export function transponderOf(descriptors: Buffer, system: number): TransponderTuning | undefined {
  for (const { tag, data } of parseDescriptors(descriptors)) {
    if (tag === DESCRIPTOR_SATELLITE && (system === SYS.DVBS || system === SYS.DVBS2))
      return satellite(data);
    if (tag === DESCRIPTOR_CABLE && [SYS.DVBC_ANNEX_A, SYS.DVBC_ANNEX_C].includes(system as 1))
      return cable(data, system);
    if (tag === DESCRIPTOR_TERRESTRIAL && (system === SYS.DVBT || system === SYS.DVBT2))
      return terrestrial(data, system);
  }
  return undefined;
}
