// DvbFrontend and DvbDvr: the checked façade over native/dvb — a frontend tuned with the list
// src/dvb/tuning.ts computes, its status, and an adapter's TS from the demux and dvr devices,
// handed over in batches of whole packets. Arguments are checked here before crossing into C++.
import type { SecStep } from '../dvb/lnb.ts';
import type { Tuning } from '../dvb/tuning.ts';
import { TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { addon, type NativeDvbDvr, type NativeDvbFrontend, type RawDvbStatus } from './addon.ts';
import { argError, fromNative, NativeError } from './errors.ts';

/** The whole transport stream as one demux filter (the kernel's "PID" 0x2000). */
export const WHOLE_TS_PID = 8192;
/** spec 1's buffer-size counts blocks of this many bytes. */
export const BUFFER_BLOCK_BYTES = 64 * 1024;
/** A batch is handed to JS at this size (about 7 ms of a 50 Mbit/s multiplex) … */
export const DEFAULT_BATCH_BYTES = 348 * TS_PACKET_SIZE;
/** … or this long after its first packet, whichever comes first. */
export const DEFAULT_BATCH_LATENCY_MS = 10;
/** Batches waiting for the JS thread before new ones are shed (counted as queueDrops). */
export const DEFAULT_QUEUE_BATCHES = 256;
/** PIDs one demux filter may carry: a bound of sanity (which PIDs, and how many are worth it,
 *  src/dvb/pid-filter.ts decides). */
const MAX_PIDS = 64;
const MAX_INDEX = 255;

export type DvbStatus = RawDvbStatus;

function checkIndex(name: string, v: number): void {
  if (!Number.isInteger(v) || v < 0 || v > MAX_INDEX)
    throw argError(`${name} must be 0..${MAX_INDEX}, got ${v}`);
}

export class DvbFrontend {
  #fe: NativeDvbFrontend | undefined;
  #releaseLnb: boolean;

  /** Opens /dev/dvb/adapter{adapter}/frontend{device}. `releaseLnb`: power the LNB down at
   *  close (false when another receiver shares it). `readOnly`: a monitor beside the program
   *  that tunes (status only; never powers the LNB down). */
  constructor(adapter: number, device: number, releaseLnb = true, readOnly = false) {
    checkIndex('adapter', adapter);
    checkIndex('device', device);
    this.#releaseLnb = releaseLnb && !readOnly;
    try {
      this.#fe = new (addon().DvbFrontend)(adapter, device, readOnly);
    } catch (err) {
      throw fromNative(err);
    }
  }

  #open(): NativeDvbFrontend {
    if (!this.#fe) throw new NativeError('ERR_NATIVE_CLOSED', 'the frontend is closed');
    return this.#fe;
  }

  info(): { name: string; systems: number[]; api: number } {
    return this.#call((fe) => fe.info());
  }

  /** Switches the delivery system if needed, sends the LNB steps and the property list, on a
   *  worker thread (DiSEqC waits on the bus). A close() meanwhile waits for it. */
  async tune(t: Tuning): Promise<void> {
    for (const [cmd, value] of t.props) {
      if (!Number.isInteger(cmd) || !Number.isInteger(value) || value < 0 || value > 0xffffffff)
        throw argError(`DTV property ${cmd} has an invalid value ${value}`);
    }
    for (const s of t.sec) checkStep(s);
    try {
      await this.#call((fe) => fe.tune(t.system, t.sec, t.props));
    } catch (err) {
      throw fromNative(err);
    }
  }

  status(): DvbStatus {
    return this.#call((fe) => fe.status());
  }

  /** The delivery system and DTV_FREQUENCY the frontend is on, whoever tuned it. */
  tuned(): { system: number; frequency: number } {
    return this.#call((fe) => fe.tuned());
  }

  /** Idempotent. */
  close(): void {
    const fe = this.#fe;
    this.#fe = undefined;
    fe?.close(this.#releaseLnb);
  }

  #call<T>(f: (fe: NativeDvbFrontend) => T): T {
    const fe = this.#open();
    try {
      return f(fe);
    } catch (err) {
      throw fromNative(err);
    }
  }
}

function checkStep(s: SecStep): void {
  if (s.op === 'diseqc') {
    if (
      s.msg.length < 3 ||
      s.msg.length > 6 ||
      s.msg.some((b) => !Number.isInteger(b) || b < 0 || b > 255)
    )
      throw argError(`a DiSEqC message is 3 to 6 bytes, got ${JSON.stringify(s.msg)}`);
  } else if (!Number.isInteger(s.value) || s.value < 0 || s.value > 2) {
    throw argError(`${s.op} value must be 0..2, got ${s.value}`);
  }
}

function checkPids(list: number[] | undefined): number[] {
  const pids = list && list.length > 0 ? [...new Set(list)] : [WHOLE_TS_PID];
  if (pids.length > MAX_PIDS) throw argError(`at most ${MAX_PIDS} PIDs, got ${pids.length}`);
  for (const p of pids)
    if (!Number.isInteger(p) || p < 0 || p > WHOLE_TS_PID) throw argError(`PID ${p} out of range`);
  if (pids.length > 1 && pids.includes(WHOLE_TS_PID))
    throw argError('the whole TS (8192) is a filter of its own, not one PID among others');
  return pids;
}

export interface DvbDvrOptions {
  adapter: number;
  /** Demux (and dvr) index; the frontend's index on most adapters. */
  demux?: number;
  /** PIDs to filter, or [] / undefined for the whole TS. */
  pids?: number[];
  /** spec 1's buffer-size: blocks of 64 KB; 0 = the driver's default. */
  bufferBlocks?: number;
  batchBytes?: number;
  batchLatencyMs?: number;
  queueBatches?: number;
}

/** An adapter's TS: `onData` gets whole 188-byte packets, a batch at a time (a fresh Buffer). */
export class DvbDvr {
  #dvr: NativeDvbDvr | undefined;

  constructor(opts: DvbDvrOptions, onData: (batch: Buffer) => void) {
    checkIndex('adapter', opts.adapter);
    const demux = opts.demux ?? 0;
    checkIndex('demux', demux);
    const pids = checkPids(opts.pids);
    const blocks = opts.bufferBlocks ?? 0;
    if (!Number.isInteger(blocks) || blocks < 0 || blocks > 65535)
      throw argError(`bufferBlocks must be 0..65535, got ${blocks}`);
    const raw = {
      adapter: opts.adapter,
      demux,
      pids,
      bufferBytes: blocks * BUFFER_BLOCK_BYTES,
      batchBytes: opts.batchBytes ?? DEFAULT_BATCH_BYTES,
      batchLatencyMs: opts.batchLatencyMs ?? DEFAULT_BATCH_LATENCY_MS,
      queueBatches: opts.queueBatches ?? DEFAULT_QUEUE_BATCHES,
    };
    if (raw.batchBytes < TS_PACKET_SIZE || raw.batchLatencyMs < 1 || raw.queueBatches < 1)
      throw argError('batchBytes ≥ 188, batchLatencyMs ≥ 1 and queueBatches ≥ 1');
    try {
      this.#dvr = new (addon().DvbDvr)(raw, onData);
    } catch (err) {
      throw fromNative(err);
    }
  }

  /** The demux filter's PIDs from now on ([] or [8192]: the whole TS): the difference is added
   *  and removed on the running filter; to or from the whole TS the filter is set anew. */
  setPids(pids: number[]): void {
    const checked = checkPids(pids);
    if (!this.#dvr) throw new NativeError('ERR_NATIVE_CLOSED', 'the dvr is closed');
    try {
      this.#dvr.setPids(checked);
    } catch (err) {
      throw fromNative(err);
    }
  }

  stats(): ReturnType<NativeDvbDvr['stats']> {
    if (!this.#dvr) return { bytes: 0, batches: 0, queueDrops: 0, overflows: 0, readErrors: 0 };
    return this.#dvr.stats();
  }

  /** Idempotent: stops the reader thread and closes the devices. */
  close(): void {
    const d = this.#dvr;
    this.#dvr = undefined;
    d?.close();
  }
}

/** The kernel header's numbers as the addon was compiled with (for the consistency test). */
export function dvbConstants(): ReturnType<ReturnType<typeof addon>['dvbConstants']> {
  return addon().dvbConstants();
}
