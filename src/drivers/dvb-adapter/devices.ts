// The narrow device interface the adapter instance drives: the native frontend and dvr by
// default (src/native/dvb.ts); a test can plug in its own.
import type { Tuning } from '../../dvb/tuning.ts';
import { DvbDvr, type DvbDvrOptions, DvbFrontend, type DvbStatus } from '../../native/dvb.ts';
import { DvbCa } from '../../native/dvb-ca.ts';

export interface Frontend {
  info(): { name: string; systems: number[] };
  tune(t: Tuning): Promise<void>;
  status(): DvbStatus;
  tuned(): { system: number; frequency: number };
  close(): void;
}

export interface Dvr {
  stats(): Record<string, number>;
  /** The demux filter's PIDs from now on ([8192] = the whole TS). */
  setPids(pids: number[]): void;
  close(): void;
}

/** A CI slot's ca device (src/native/dvb-ca.ts). */
export interface Ca {
  caps(): { slots: number; slotType: number };
  slotInfo(slot: number): { present: boolean; ready: boolean };
  reset(slot: number): void;
  send(tpdu: Buffer): void;
  stats(): Record<string, number>;
  close(): void;
}

export interface DvbDevices {
  /** `readOnly`: a monitor's (mode 2) — status only, the LNB power never touched. */
  frontend(adapter: number, device: number, releaseLnb: boolean, readOnly: boolean): Frontend;
  dvr(opts: DvbDvrOptions, onData: (batch: Buffer) => void): Dvr;
  /** `onEvent` gets each TPDU the module sends, or a read or write error. */
  ca(
    adapter: number,
    index: number,
    onEvent: (tpdu: Buffer | null, error: string | null) => void,
  ): Ca;
}

export const nativeDevices: DvbDevices = {
  frontend: (adapter, device, releaseLnb, readOnly) =>
    new DvbFrontend(adapter, device, releaseLnb, readOnly),
  dvr: (opts, onData) => new DvbDvr(opts, onData),
  ca: (adapter, index, onEvent) => new DvbCa(adapter, index, onEvent),
};
