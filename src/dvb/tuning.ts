// A tuner adapter record (spec 1) → its delivery system, the DTV property list for
// FE_SET_PROPERTY and the LNB steps before it: the same list, in the same order, as libdvbv5
// sends for the same channel (test/dvb/libdvbv5.test.ts). Pure: the ioctls are native/dvb's.
import type { DvbAdapterSpec } from '../config/spec-types.generated.ts';
import {
  DTV,
  FEC_AUTO,
  NO_STREAM_ID_FILTER,
  PILOT_AUTO,
  QAM_AUTO,
  ROLLOFF_AUTO,
  SYS,
} from './api.ts';
import { lnbPlan, type SecStep } from './lnb.ts';

/** One DTV property: [command, value]. */
export type DtvProperty = readonly [cmd: number, value: number];

export interface Tuning {
  /** `enum fe_delivery_system`. */
  system: number;
  /** Satellite control steps (voltage, tone, DiSEqC) to send before the properties. */
  sec: SecStep[];
  /** FE_SET_PROPERTY's list, ending in DTV_TUNE. */
  props: DtvProperty[];
}

/** Why a record cannot be tuned: the member (JSON pointer inside the record) and the words. */
export interface TuningProblem {
  pointer: string;
  message: string;
}

export type TuningResult = { ok: true; tuning: Tuning } | { ok: false; problem: TuningProblem };

const KHZ = 1000;
const SATELLITE = new Set<number>([SYS.DVBS, SYS.DVBS2]);
const TERRESTRIAL = new Set<number>([SYS.DVBT, SYS.DVBT2]);
const CABLE_WITH_RATE = new Set<number>([SYS.DVBC_ANNEX_A, SYS.DVBC_ANNEX_C]);
/** Spec defaults of the members the property list reads. */
const DEFAULTS = {
  'spectral-inversion': 2,
  modulation: -1,
  fec: FEC_AUTO,
  'symbol-rate': 0,
  'dvb-stream-id': -1,
  bandwidth: 8000,
  'transmission-mode': 2,
  'guard-interval': 4,
  'hierarchy-information': 4,
} as const;
const MODULATION_NOT_SET = -1;
const STREAM_ID_AUTO = -1;

export function isSatellite(type: number | undefined): boolean {
  return type !== undefined && SATELLITE.has(type);
}

/** What a scan knows beyond spec 1's members: the terrestrial code rates and the DVB-S2
 *  roll-off a NIT announces. */
export interface TuningExtra {
  codeRateHp?: number;
  codeRateLp?: number;
  rollOff?: number;
}

/** The tuning of a mode 0 (stream) adapter, or what stops it. */
export function tuningOf(a: DvbAdapterSpec, extra: TuningExtra = {}): TuningResult {
  const type = a.type ?? 0;
  const no = (pointer: string, message: string): TuningResult => ({
    ok: false,
    problem: { pointer, message },
  });
  if (type === 0) return no('/type', 'type is not set: no delivery system to tune');
  if (!a.freq) return no('/freq', 'freq is not set');
  const v = <K extends keyof typeof DEFAULTS>(k: K): number =>
    (a[k as keyof DvbAdapterSpec] as number | undefined) ?? DEFAULTS[k];
  const modulation = v('modulation') === MODULATION_NOT_SET ? QAM_AUTO : v('modulation');
  const streamId = v('dvb-stream-id') === STREAM_ID_AUTO ? NO_STREAM_ID_FILTER : v('dvb-stream-id');
  const props: DtvProperty[] = [];
  const add = (cmd: number, value: number) => props.push([cmd, value]);
  let sec: SecStep[] = [];
  if (isSatellite(type)) {
    const pol = a['lnb-polarization'] ?? -1;
    if (pol !== 0 && pol !== 1) return no('/lnb-polarization', 'lnb-polarization is not set');
    const lnb = lnbPlan(a.freq, a);
    sec = lnb.steps;
    add(DTV.FREQUENCY, lnb.ifKHz);
    add(DTV.INVERSION, v('spectral-inversion'));
    add(DTV.SYMBOL_RATE, v('symbol-rate') * KHZ);
    add(DTV.INNER_FEC, v('fec'));
    if (type === SYS.DVBS2) {
      add(DTV.MODULATION, modulation);
      add(DTV.PILOT, PILOT_AUTO);
      add(DTV.ROLLOFF, extra.rollOff ?? ROLLOFF_AUTO);
      add(DTV.STREAM_ID, streamId);
    }
  } else if (TERRESTRIAL.has(type)) {
    add(DTV.FREQUENCY, a.freq * KHZ);
    add(DTV.MODULATION, modulation);
    add(DTV.BANDWIDTH_HZ, v('bandwidth') * KHZ);
    add(DTV.INVERSION, v('spectral-inversion'));
    add(DTV.CODE_RATE_HP, extra.codeRateHp ?? FEC_AUTO);
    add(DTV.CODE_RATE_LP, extra.codeRateLp ?? FEC_AUTO);
    add(DTV.GUARD_INTERVAL, v('guard-interval'));
    add(DTV.TRANSMISSION_MODE, v('transmission-mode'));
    add(DTV.HIERARCHY, v('hierarchy-information'));
    if (type === SYS.DVBT2) add(DTV.STREAM_ID, streamId);
  } else {
    add(DTV.FREQUENCY, a.freq * KHZ);
    add(DTV.MODULATION, modulation);
    // Annex B (ITU-T J.83 B) has fixed symbol rates and inner code: the kernel takes neither.
    if (CABLE_WITH_RATE.has(type)) {
      add(DTV.INVERSION, v('spectral-inversion'));
      add(DTV.SYMBOL_RATE, v('symbol-rate') * KHZ);
      add(DTV.INNER_FEC, v('fec'));
    }
  }
  add(DTV.DELIVERY_SYSTEM, type);
  add(DTV.TUNE, 0);
  return { ok: true, tuning: { system: type, sec, props } };
}
