// DvbCa: the checked façade over native/dvb/ca — a CI slot's ca device: capabilities, slot state,
// reset, and ca-framed TPDUs written and read on a native thread (the EN 50221 host above it is
// src/dvb/en50221/).
import { addon, type NativeDvbCa } from './addon.ts';
import { argError, fromNative, NativeError } from './errors.ts';

/** ca_slot_info.type / ca_caps.slot_type bit of a slot with the link layer in the kernel. */
export const CA_CI_LINK = 2;
const MAX_INDEX = 255;
/** A ca-framed TPDU: slot and t_c_id, then tag, a length of up to 3 bytes and the t_c_id. */
const MIN_TPDU = 5;
const MAX_TPDU = 65536;

export class DvbCa {
  #ca: NativeDvbCa | undefined;

  /** Opens /dev/dvb/adapter{adapter}/ca{index}; `onEvent` gets each TPDU the module sends, or
   *  the error of a failed read or write. */
  constructor(
    adapter: number,
    index: number,
    onEvent: (tpdu: Buffer | null, error: string | null) => void,
  ) {
    for (const [name, v] of [
      ['adapter', adapter],
      ['ca', index],
    ] as const)
      if (!Number.isInteger(v) || v < 0 || v > MAX_INDEX)
        throw argError(`${name} must be 0..${MAX_INDEX}, got ${v}`);
    try {
      this.#ca = new (addon().DvbCa)(adapter, index, onEvent);
    } catch (err) {
      throw fromNative(err);
    }
  }

  caps(): { slots: number; slotType: number } {
    return this.#call((c) => c.caps());
  }

  slotInfo(slot: number): { type: number; present: boolean; ready: boolean } {
    checkSlot(slot);
    return this.#call((c) => c.slotInfo(slot));
  }

  reset(slot: number): void {
    checkSlot(slot);
    this.#call((c) => c.reset(slot));
  }

  send(tpdu: Buffer): void {
    if (tpdu.length < MIN_TPDU || tpdu.length > MAX_TPDU)
      throw argError(`a TPDU is ${MIN_TPDU}..${MAX_TPDU} bytes, got ${tpdu.length}`);
    this.#call((c) => c.send(tpdu));
  }

  stats(): { reads: number; writes: number; errors: number } {
    return this.#ca?.stats() ?? { reads: 0, writes: 0, errors: 0 };
  }

  /** Idempotent: stops the thread and closes the device. */
  close(): void {
    const c = this.#ca;
    this.#ca = undefined;
    c?.close();
  }

  #call<T>(f: (c: NativeDvbCa) => T): T {
    if (!this.#ca) throw new NativeError('ERR_NATIVE_CLOSED', 'the ca device is closed');
    try {
      return f(this.#ca);
    } catch (err) {
      throw fromNative(err);
    }
  }
}

function checkSlot(slot: number): void {
  if (!Number.isInteger(slot) || slot < 0 || slot > 31)
    throw argError(`slot must be 0..31, got ${slot}`);
}
