// The Linux DVB API v5 numbers sluice speaks, as linux/dvb/frontend.h (linux-libc-dev) defines
// them; native/dvb exports the header's own values and test/native/dvb.test.ts checks these
// against them, so a difference fails a test rather than a tuning.

/** DTV property commands (`DTV_*`). */
export const DTV = {
  TUNE: 1,
  CLEAR: 2,
  FREQUENCY: 3,
  MODULATION: 4,
  BANDWIDTH_HZ: 5,
  INVERSION: 6,
  SYMBOL_RATE: 8,
  INNER_FEC: 9,
  VOLTAGE: 10,
  TONE: 11,
  PILOT: 12,
  ROLLOFF: 13,
  DELIVERY_SYSTEM: 17,
  CODE_RATE_HP: 36,
  CODE_RATE_LP: 37,
  GUARD_INTERVAL: 38,
  TRANSMISSION_MODE: 39,
  HIERARCHY: 40,
  STREAM_ID: 42,
} as const;

/** Delivery systems (`enum fe_delivery_system`); spec 1's adapter `type` uses the same numbers. */
export const SYS = {
  DVBC_ANNEX_A: 1,
  DVBC_ANNEX_B: 2,
  DVBT: 3,
  DVBS: 5,
  DVBS2: 6,
  DVBT2: 16,
  DVBC_ANNEX_C: 18,
} as const;

/** `enum fe_sec_voltage`, `enum fe_sec_tone_mode`, `enum fe_sec_mini_cmd`. */
export const SEC_VOLTAGE_13 = 0;
export const SEC_VOLTAGE_18 = 1;
export const SEC_VOLTAGE_OFF = 2;
export const SEC_TONE_ON = 0;
export const SEC_TONE_OFF = 1;
export const SEC_MINI_A = 0;
export const SEC_MINI_B = 1;

/** Values spec 1 has no field for, sent as their "automatic" setting. */
export const FEC_AUTO = 9;
export const QAM_AUTO = 6;
export const PILOT_AUTO = 2;
export const ROLLOFF_AUTO = 3;
/** DTV_STREAM_ID's "no filter": the frontend takes every input stream / PLP. */
export const NO_STREAM_ID_FILTER = 0xffffffff;
