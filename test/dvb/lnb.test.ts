// LNB arithmetic, table-driven: intermediate frequency, band, and the voltage / tone / DiSEqC
// steps for universal, single-band and C-band LNBs, forced tone, switch ports and sharing.
import t from 'tap';
import {
  SEC_MINI_A,
  SEC_MINI_B,
  SEC_TONE_OFF,
  SEC_TONE_ON,
  SEC_VOLTAGE_13,
  SEC_VOLTAGE_18,
} from '../../src/dvb/api.ts';
import { type LnbConfig, lnbPlan, type SecStep } from '../../src/dvb/lnb.ts';

const UNIVERSAL = { 'lnb-freq1': 9750, 'lnb-freq2': 10600, 'lnb-freq-range': 11700 };
const V = (value: number): SecStep => ({ op: 'voltage', value });
const TONE = (on: boolean): SecStep => ({ op: 'tone', value: on ? SEC_TONE_ON : SEC_TONE_OFF });
const OFF = TONE(false);

const cases: {
  name: string;
  freq: number;
  lnb: LnbConfig;
  ifKHz: number;
  high: boolean;
  steps: SecStep[];
}[] = [
  {
    name: 'universal, low band, vertical',
    freq: 11362,
    lnb: { ...UNIVERSAL, 'lnb-polarization': 1 },
    ifKHz: 1612000,
    high: false,
    steps: [V(SEC_VOLTAGE_13), OFF, OFF],
  },
  {
    name: 'universal, high band, horizontal',
    freq: 11778,
    lnb: { ...UNIVERSAL, 'lnb-polarization': 0 },
    ifKHz: 1178000,
    high: true,
    steps: [V(SEC_VOLTAGE_18), OFF, TONE(true)],
  },
  {
    name: 'universal, exactly the switch-over frequency is low band',
    freq: 11700,
    lnb: { ...UNIVERSAL, 'lnb-polarization': 1 },
    ifKHz: 1950000,
    high: false,
    steps: [V(SEC_VOLTAGE_13), OFF, OFF],
  },
  {
    name: 'single band (no second oscillator): never high band',
    freq: 12500,
    lnb: { 'lnb-freq1': 10750, 'lnb-freq-range': 11700, 'lnb-polarization': 0 },
    ifKHz: 1750000,
    high: false,
    steps: [V(SEC_VOLTAGE_18), OFF, OFF],
  },
  {
    name: 'C band: oscillator above the signal',
    freq: 3800,
    lnb: { 'lnb-freq1': 5150, 'lnb-polarization': 1 },
    ifKHz: 1350000,
    high: false,
    steps: [V(SEC_VOLTAGE_13), OFF, OFF],
  },
  {
    name: 'forced tone on a single band LNB',
    freq: 12300,
    lnb: { 'lnb-freq1': 11250, 'lnb-polarization': 1, 'lnb-force-tone': true },
    ifKHz: 1050000,
    high: false,
    steps: [V(SEC_VOLTAGE_13), OFF, TONE(true)],
  },
  {
    name: 'DiSEqC port 1, low band, horizontal: command then burst A',
    freq: 11362,
    lnb: { ...UNIVERSAL, 'lnb-polarization': 0, 'lnb-diseqc': 1 },
    ifKHz: 1612000,
    high: false,
    steps: [
      V(SEC_VOLTAGE_18),
      OFF,
      { op: 'diseqc', msg: [0xe0, 0x10, 0x38, 0xf2] },
      { op: 'burst', value: SEC_MINI_A },
      OFF,
    ],
  },
  {
    name: 'DiSEqC port 2, high band, vertical: burst B, tone on',
    freq: 11778,
    lnb: { ...UNIVERSAL, 'lnb-polarization': 1, 'lnb-diseqc': 2 },
    ifKHz: 1178000,
    high: true,
    steps: [
      V(SEC_VOLTAGE_13),
      OFF,
      { op: 'diseqc', msg: [0xe0, 0x10, 0x38, 0xf5] },
      { op: 'burst', value: SEC_MINI_B },
      TONE(true),
    ],
  },
  {
    name: 'DiSEqC port 3: polarization and band in the command only, 13 V, no tone',
    freq: 11778,
    lnb: { ...UNIVERSAL, 'lnb-polarization': 0, 'lnb-diseqc': 3 },
    ifKHz: 1178000,
    high: true,
    steps: [V(SEC_VOLTAGE_13), OFF, { op: 'diseqc', msg: [0xe0, 0x10, 0x38, 0xfb] }, OFF],
  },
  {
    name: 'DiSEqC port 4, low band, vertical',
    freq: 11362,
    lnb: { ...UNIVERSAL, 'lnb-polarization': 1, 'lnb-diseqc': 4 },
    ifKHz: 1612000,
    high: false,
    steps: [V(SEC_VOLTAGE_13), OFF, { op: 'diseqc', msg: [0xe0, 0x10, 0x38, 0xfc] }, OFF],
  },
  {
    name: 'sharing: the frequency arithmetic stays, voltage and tone are left alone',
    freq: 11778,
    lnb: { ...UNIVERSAL, 'lnb-polarization': 0, 'lnb-sharing': true, 'lnb-diseqc': 2 },
    ifKHz: 1178000,
    high: true,
    steps: [],
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const plan = lnbPlan(c.freq, c.lnb);
    t.equal(plan.ifKHz, c.ifKHz, 'intermediate frequency');
    t.equal(plan.highBand, c.high, 'band');
    t.same(plan.steps, c.steps, 'steps');
  });
}
