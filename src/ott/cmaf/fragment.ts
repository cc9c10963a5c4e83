// Media fragment of one CMAF track: moof (mfhd, traf: tfhd, tfdt, trun) + mdat.
import { box, fullBox, u32, u64 } from './box.ts';
import { TRACK_ID } from './init.ts';

export interface Sample {
  data: Buffer;
  duration: number;
  /** Composition offset (PTS − DTS) in the track timescale. */
  cto: number;
  sync: boolean;
}

const TFHD_DEFAULT_BASE_IS_MOOF = 0x020000;
const TRUN_DATA_OFFSET = 0x000001;
const TRUN_DURATION = 0x000100;
const TRUN_SIZE = 0x000200;
const TRUN_FLAGS = 0x000400;
const TRUN_CTO = 0x000800;
/** sample_depends_on = 2 (does not depend on others), not a non-sync sample. */
const SAMPLE_FLAGS_SYNC = 0x02000000;
/** sample_depends_on = 1, sample_is_non_sync_sample = 1. */
const SAMPLE_FLAGS_NON_SYNC = 0x01010000;
const TRUN_ENTRY_BYTES = 16;
const TRUN_HEADER_BYTES = 20; // box header 8 + version/flags 4 + count 4 + data offset 4

export function mfhd(sequence: number): Buffer {
  return fullBox('mfhd', 0, 0, u32(sequence));
}

export function tfhd(): Buffer {
  return fullBox('tfhd', 0, TFHD_DEFAULT_BASE_IS_MOOF, u32(TRACK_ID));
}

export function tfdt(baseDecodeTime: number): Buffer {
  return fullBox('tfdt', 1, 0, u64(baseDecodeTime));
}

/** trun with version 1 (signed composition offsets); dataOffset counts from the moof start. */
export function trun(samples: Sample[], dataOffset: number): Buffer {
  const flags = TRUN_DATA_OFFSET | TRUN_DURATION | TRUN_SIZE | TRUN_FLAGS | TRUN_CTO;
  const body = Buffer.allocUnsafe(8 + samples.length * TRUN_ENTRY_BYTES);
  body.writeUInt32BE(samples.length, 0);
  body.writeInt32BE(dataOffset, 4);
  let o = 8;
  for (const s of samples) {
    body.writeUInt32BE(s.duration >>> 0, o);
    body.writeUInt32BE(s.data.length, o + 4);
    body.writeUInt32BE(s.sync ? SAMPLE_FLAGS_SYNC : SAMPLE_FLAGS_NON_SYNC, o + 8);
    body.writeInt32BE(s.cto | 0, o + 12);
    o += TRUN_ENTRY_BYTES;
  }
  return fullBox('trun', 1, flags, body);
}

export function traf(samples: Sample[], baseDecodeTime: number, dataOffset: number): Buffer {
  return box('traf', tfhd(), tfdt(baseDecodeTime), trun(samples, dataOffset));
}

export function moof(sequence: number, samples: Sample[], baseDecodeTime: number): Buffer {
  // The data offset depends on the moof size, which is fixed by the sample count.
  const moofSize = 8 + 16 + 8 + 16 + 20 + TRUN_HEADER_BYTES + samples.length * TRUN_ENTRY_BYTES;
  const out = box('moof', mfhd(sequence), traf(samples, baseDecodeTime, moofSize + 8));
  return out;
}

export function mdat(samples: Sample[]): Buffer {
  return box('mdat', ...samples.map((s) => s.data));
}

const BOX_HEADER_BYTES = 8;

/** Bytes of the moof + mdat that `writeFragment` writes for these samples. */
export function fragmentSize(samples: Sample[]): number {
  let size = 8 + 16 + 8 + 16 + 20 + TRUN_HEADER_BYTES + samples.length * TRUN_ENTRY_BYTES;
  size += BOX_HEADER_BYTES;
  for (const s of samples) size += s.data.length;
  return size;
}

/** Write moof + mdat at `at` in `target` (which has `fragmentSize` bytes free there): the
 *  sample bytes are copied once, straight into place. Returns the bytes written. */
export function writeFragment(
  target: Buffer,
  at: number,
  sequence: number,
  samples: Sample[],
  baseDecodeTime: number,
): number {
  const head = moof(sequence, samples, baseDecodeTime);
  head.copy(target, at);
  let o = at + head.length;
  const mdatStart = o;
  target.write('mdat', o + 4, 4, 'latin1');
  o += BOX_HEADER_BYTES;
  for (const s of samples) o += s.data.copy(target, o);
  target.writeUInt32BE(o - mdatStart, mdatStart);
  return o - at;
}

export function fragment(sequence: number, samples: Sample[], baseDecodeTime: number): Buffer {
  const out = Buffer.allocUnsafe(fragmentSize(samples));
  writeFragment(out, 0, sequence, samples, baseDecodeTime);
  return out;
}
