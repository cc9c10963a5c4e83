// LNB and DiSEqC 1.0 arithmetic for satellite adapters: the intermediate frequency the frontend
// tunes, and the voltage / 22 kHz tone / committed-switch messages that go before the tuning, in
// the order libdvbv5 sends them (docs/dvb.md, test/dvb/libdvbv5.test.ts).
import {
  SEC_MINI_A,
  SEC_MINI_B,
  SEC_TONE_OFF,
  SEC_TONE_ON,
  SEC_VOLTAGE_13,
  SEC_VOLTAGE_18,
} from './api.ts';

/** The LNB members of a satellite adapter record (spec 1; MHz). */
export interface LnbConfig {
  'lnb-freq1'?: number;
  'lnb-freq2'?: number;
  'lnb-freq-range'?: number;
  'lnb-sharing'?: boolean;
  /** 0 horizontal, 1 vertical. */
  'lnb-polarization'?: number;
  'lnb-force-tone'?: boolean;
  'lnb-diseqc'?: number;
}

/** One satellite equipment control step, as the frontend ioctl that carries it. */
export type SecStep =
  | { op: 'voltage'; value: number }
  | { op: 'tone'; value: number }
  | { op: 'diseqc'; msg: number[] }
  | { op: 'burst'; value: number };

export interface LnbPlan {
  /** What DTV_FREQUENCY carries for a satellite system: the intermediate frequency, kHz. */
  ifKHz: number;
  highBand: boolean;
  steps: SecStep[];
}

const KHZ_PER_MHZ = 1000;
const POL_HORIZONTAL = 0;
/** DiSEqC 1.0 "write to port group 0 (committed switches)": framing E0 (master, no reply),
 *  address 10 (any LNB or switcher), command 38, then the data byte F0 | port | pol | band. */
const DISEQC_COMMITTED = [0xe0, 0x10, 0x38] as const;
const DISEQC_DATA_BASE = 0xf0;
/** Switch ports 3 and 4 take polarization and band from the command alone: like libdvbv5,
 *  the line stays at 13 V with no tone and no tone burst follows. */
const FIRST_COMMAND_ONLY_PORT = 3;

/** The high band is used when there is a second oscillator and the frequency is above the
 *  switch-over (a frequency equal to it is low band, as in libdvbv5). */
export function isHighBand(freqMHz: number, lnb: LnbConfig): boolean {
  const lo2 = lnb['lnb-freq2'] ?? 0;
  const range = lnb['lnb-freq-range'] ?? 0;
  return lo2 > 0 && range > 0 && freqMHz > range;
}

/** The intermediate frequency and the control steps for tuning `freqMHz` through `lnb`. */
export function lnbPlan(freqMHz: number, lnb: LnbConfig): LnbPlan {
  const highBand = isHighBand(freqMHz, lnb);
  const lo = (highBand ? lnb['lnb-freq2'] : lnb['lnb-freq1']) ?? 0;
  // C-band LNBs have the oscillator above the signal: the IF is the distance either way.
  const ifKHz = Math.abs(freqMHz - lo) * KHZ_PER_MHZ;
  return { ifKHz, highBand, steps: lnb['lnb-sharing'] ? [] : secSteps(highBand, lnb) };
}

function secSteps(highBand: boolean, lnb: LnbConfig): SecStep[] {
  const horizontal = lnb['lnb-polarization'] === POL_HORIZONTAL;
  const port = lnb['lnb-diseqc'] ?? 0;
  const force = lnb['lnb-force-tone'] === true;
  const commandOnly = port >= FIRST_COMMAND_ONLY_PORT;
  const voltage = horizontal && !commandOnly ? SEC_VOLTAGE_18 : SEC_VOLTAGE_13;
  const toneOn = force || (highBand && !commandOnly);
  const steps: SecStep[] = [
    { op: 'voltage', value: voltage },
    { op: 'tone', value: SEC_TONE_OFF },
  ];
  if (port > 0) {
    const data = DISEQC_DATA_BASE | ((port - 1) << 2) | (horizontal ? 2 : 0) | (highBand ? 1 : 0);
    steps.push({ op: 'diseqc', msg: [...DISEQC_COMMITTED, data] });
    if (!commandOnly) steps.push({ op: 'burst', value: port === 1 ? SEC_MINI_A : SEC_MINI_B });
  }
  steps.push({ op: 'tone', value: toneOn ? SEC_TONE_ON : SEC_TONE_OFF });
  return steps;
}
