// TDT (0x70) and TOT (0x73) parsing: UTC time and the local time offsets of the TOT's
// local_time_offset_descriptor (EN 300 468 §5.2.5, §6.2.20).
import { TDT_TABLE_ID, TOT_TABLE_ID } from '../mpegts/psi.ts';
import { readBcdHhmm, readMjdTime } from './dvb-time.ts';

const DESC_LOCAL_TIME_OFFSET = 0x58;
const LTO_ENTRY_LEN = 13;

export interface LocalTimeOffset {
  country: string;
  region: number;
  /** Offset from UTC in seconds (east positive). */
  offset: number;
}

export interface TimeTable {
  tableId: number;
  utc: number | undefined;
  offsets: LocalTimeOffset[];
}

export function parseTimeSection(buf: Uint8Array): TimeTable {
  const tableId = buf[0]!;
  if (tableId !== TDT_TABLE_ID && tableId !== TOT_TABLE_ID) throw new Error('not a TDT/TOT');
  const out: TimeTable = { tableId, utc: readMjdTime(buf, 3), offsets: [] };
  if (tableId !== TOT_TABLE_ID) return out;
  const loopLen = ((buf[8]! & 0x0f) << 8) | buf[9]!;
  const end = Math.min(10 + loopLen, buf.length);
  let off = 10;
  while (off + 2 <= end) {
    const tag = buf[off]!;
    const len = buf[off + 1]!;
    if (tag === DESC_LOCAL_TIME_OFFSET) {
      for (
        let i = off + 2;
        i + LTO_ENTRY_LEN <= off + 2 + len && i + LTO_ENTRY_LEN <= end;
        i += LTO_ENTRY_LEN
      ) {
        const negative = (buf[i + 3]! & 1) === 1;
        const minutes = readBcdHhmm(buf, i + 4);
        out.offsets.push({
          country: String.fromCharCode(buf[i]!, buf[i + 1]!, buf[i + 2]!),
          region: buf[i + 3]! >> 2,
          offset: (negative ? -1 : 1) * minutes * 60,
        });
      }
    }
    off += 2 + len;
  }
  return out;
}
