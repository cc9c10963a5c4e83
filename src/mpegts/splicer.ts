// Keeps a stream's output one continuous transport stream across input switches: continuity
// counters stay monotonic per output PID, PAT/PMT are re-versioned (also when a section spans
// several packets: psi-rewrite.ts), and the first packet of every PID after a splice carries
// discontinuity_indicator. PIDs pass through unchanged.

import {
  cc,
  hasPayload,
  markDiscontinuity,
  NULL_PID,
  PAT_PID,
  pid,
  pusi,
  setCc,
  TS_PACKET_SIZE,
} from './packet.ts';
import { PAT_TABLE_ID, PMT_TABLE_ID, parsePat, patPmtPids } from './psi.ts';
import { PsiRewriter } from './psi-rewrite.ts';

/** After a splice, packets before the new input's first PAT are dropped, but no longer than
 *  this many packets (about 4 s at 8 Mbit/s), so a stream without PSI still gets through. */
const MAX_PSI_WAIT_PACKETS = 20_000;

interface PidState {
  offset: number;
  lastOut: number;
  /** The first packet after a splice still has to be marked. */
  splice: boolean;
}

interface TableVersion {
  inVer: number;
  outVer: number;
  bump: boolean;
}

export interface SplicerStats {
  splices: number;
  droppedWaitingPsi: number;
  droppedNull: number;
}

export class Splicer {
  private pids = new Map<number, PidState>();
  private tables = new Map<string, TableVersion>();
  private pmtPids = new Set<number>();
  private rewriters = new Map<number, PsiRewriter>();
  private awaitingPsi = false;
  private waited = 0;
  /** Where batches that are not ours are copied to be rewritten (see push). */
  private scratch = Buffer.alloc(0);
  /** Bitrate mode 1: null packets are removed. */
  dropNull = false;
  readonly stats: SplicerStats = { splices: 0, droppedWaitingPsi: 0, droppedNull: 0 };

  /** The next packets come from another input (or the same one restarted). */
  splice(): void {
    this.stats.splices++;
    this.awaitingPsi = true;
    this.waited = 0;
    for (const st of this.pids.values()) st.splice = true;
    for (const tv of this.tables.values()) tv.bump = true;
    for (const rw of this.rewriters.values()) rw.abandon();
  }

  /** Forget everything (stream restarted from scratch). */
  reset(): void {
    this.pids.clear();
    this.tables.clear();
    this.pmtPids.clear();
    this.rewriters.clear();
    this.awaitingPsi = false;
  }

  /** Rewrite a batch of aligned packets; returns the output packets (possibly empty).
   *  `owned`: the caller hands `batch` over (rewritten in place, no copy); otherwise it is copied
   *  first, since a transport may reuse its read buffer: into the splicer's own block, reused
   *  by the next push, so the output is then valid until the next call only (the bus's rule:
   *  engine/bus.ts). A fresh copy per batch was most of what a file stream allocated, and the
   *  collections it caused were a fifth of a transcoding sluice's CPU (bench/transcode.ts). */
  push(batch: Buffer, owned = false): Buffer {
    const parts: Buffer[] = [];
    let runStart = -1;
    const buf = owned ? batch : this.copyIn(batch); // headers are rewritten in place
    const flushRun = (end: number) => {
      if (runStart >= 0 && end > runStart) parts.push(buf.subarray(runStart, end));
      runStart = -1;
    };
    for (let o = 0; o + TS_PACKET_SIZE <= buf.length; o += TS_PACKET_SIZE) {
      const p = pid(buf, o);
      if (p === NULL_PID) {
        if (this.dropNull || this.awaitingPsi) {
          flushRun(o);
          this.stats.droppedNull++;
          continue;
        }
        if (runStart < 0) runStart = o;
        continue;
      }
      if (this.awaitingPsi) {
        if (p === PAT_PID && pusi(buf, o)) {
          this.awaitingPsi = false;
        } else if (++this.waited < MAX_PSI_WAIT_PACKETS) {
          this.stats.droppedWaitingPsi++;
          continue;
        } else {
          this.awaitingPsi = false;
        }
      }
      if (p === PAT_PID || this.pmtPids.has(p)) this.rewriteSection(buf, o, p);
      let st = this.pids.get(p);
      if (!st) {
        st = { offset: 0, lastOut: -1, splice: false };
        this.pids.set(p, st);
      }
      const inCc = cc(buf, o);
      const payload = hasPayload(buf, o);
      if (st.splice && st.lastOut >= 0) {
        const next = payload ? st.lastOut + 1 : st.lastOut;
        st.offset = (next - inCc) & 0x0f;
      }
      const out = (inCc + st.offset) & 0x0f;
      setCc(buf, o, out);
      if (st.splice) {
        st.splice = false;
        flushRun(o);
        const marked = markDiscontinuity(buf, o);
        parts.push(marked);
        if (marked.length > TS_PACKET_SIZE) {
          // One displaced-payload packet follows: it took the next counter value.
          st.offset = (st.offset + 1) & 0x0f;
          st.lastOut = (out + 1) & 0x0f;
        } else {
          st.lastOut = out;
        }
        continue;
      }
      st.lastOut = out;
      if (runStart < 0) runStart = o;
    }
    flushRun(buf.length - (buf.length % TS_PACKET_SIZE));
    if (parts.length === 1) return parts[0]!;
    return compact(buf, parts);
  }

  /** `batch` copied into the reused block (grown to the largest batch seen). */
  private copyIn(batch: Buffer): Buffer {
    if (this.scratch.length < batch.length) this.scratch = Buffer.allocUnsafeSlow(batch.length);
    batch.copy(this.scratch);
    return this.scratch.subarray(0, batch.length);
  }

  /** Re-version PAT/PMT sections (single- or multi-packet) in place; learn PMT PIDs. */
  private rewriteSection(buf: Buffer, o: number, p: number): void {
    let rw = this.rewriters.get(p);
    if (!rw) {
      rw = this.makeRewriter(p);
      this.rewriters.set(p, rw);
    }
    rw.packet(buf, o);
  }

  private makeRewriter(p: number): PsiRewriter {
    const want = p === PAT_PID ? PAT_TABLE_ID : PMT_TABLE_ID;
    // One PAT per stream and one PMT per PID: keyed without the table extension so a new
    // input with another transport_stream_id or programme number still gets a new version.
    const key = `${p}:${want}`;
    return new PsiRewriter({
      version: (tableId, inVer) => {
        if (tableId !== want) return null;
        const tv = this.tables.get(key);
        if (!tv) return null; // first sight: the input's own version goes out
        const out = tv.bump || tv.inVer !== inVer ? (tv.outVer + 1) & 0x1f : tv.outVer;
        return out === inVer ? null : out;
      },
      complete: (section, inVer) => {
        if (section[0] !== want) return;
        const outVer = (section[5]! >> 1) & 0x1f;
        this.tables.set(key, { inVer, outVer, bump: false });
        if (p === PAT_PID) this.pmtPids = patPmtPids(parsePat(section));
      },
    });
  }
}

/**
 * The kept runs of `buf` moved together at its start (the batch is ours to rewrite), so dropping
 * null packets costs no new buffer per batch: at a hundred streams, a fresh buffer for every
 * receive batch is what makes the garbage collector run all the time. A run that is not in
 * `buf` (a packet rebuilt at a splice) makes it a plain concatenation.
 */
function compact(buf: Buffer, parts: Buffer[]): Buffer {
  const end = buf.byteOffset + buf.length;
  for (const p of parts) {
    // Small buffers share Node's pool slabs: being in `buf` means lying within its range.
    const inside = p.buffer === buf.buffer && p.byteOffset >= buf.byteOffset;
    if (!inside || p.byteOffset + p.length > end) return Buffer.concat(parts);
  }
  let w = 0;
  for (const p of parts) {
    const from = p.byteOffset - buf.byteOffset;
    if (from !== w) buf.copyWithin(w, from, from + p.length);
    w += p.length;
  }
  return buf.subarray(0, w);
}
