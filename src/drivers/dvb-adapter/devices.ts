// The narrow device interface the adapter instance drives: the native frontend and dvr by
// default (src/native/dvb.ts); a test can plug in its own.
import type { Tuning } from '../../dvb/tuning.ts';
import { DvbDvr, type DvbDvrOptions, DvbFrontend, type DvbStatus } from '../../native/dvb.ts';

export interface Frontend {
  info(): { name: string; systems: number[] };
  tune(t: Tuning): void;
  status(): DvbStatus;
  close(): void;
}

export interface Dvr {
  stats(): Record<string, number>;
  close(): void;
}

export interface DvbDevices {
  frontend(adapter: number, device: number, releaseLnb: boolean): Frontend;
  dvr(opts: DvbDvrOptions, onData: (batch: Buffer) => void): Dvr;
}

export const nativeDevices: DvbDevices = {
  frontend: (adapter, device, releaseLnb) => new DvbFrontend(adapter, device, releaseLnb),
  dvr: (opts, onData) => new DvbDvr(opts, onData),
};
