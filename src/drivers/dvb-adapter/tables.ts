// The PAT and every programme's PMT of a tuner adapter's TS, read as it passes (for the demux
// filter and the CAM's CA PMTs); `onChange` on a new PAT or a new PMT version.
import { PAT_PID, pid as packetPid, TS_PACKET_SIZE } from '../../mpegts/packet.ts';
import { type Pmt, parsePat, parsePmt } from '../../mpegts/psi.ts';
import { SectionReader } from '../../mpegts/section-reader.ts';

const PAT_TABLE_ID = 0x00;
const PMT_TABLE_ID = 0x02;

export class ProgrammeTables {
  /** programme number → PMT PID; null before the first PAT. */
  pat: Map<number, number> | null = null;
  readonly pmts = new Map<number, Pmt>();
  private readonly readers = new Map<number, SectionReader>();
  private patBytes: Buffer | null = null;

  constructor(private readonly onChange: (pmt: Pmt | null) => void) {
    this.readers.set(PAT_PID, new SectionReader((s) => this.onPat(s)));
  }

  push(batch: Buffer): void {
    for (let o = 0; o + TS_PACKET_SIZE <= batch.length; o += TS_PACKET_SIZE)
      this.readers.get(packetPid(batch, o))?.packet(batch, o);
  }

  private onPat(s: Buffer): void {
    if (s[0] !== PAT_TABLE_ID || (this.patBytes && s.equals(this.patBytes))) return;
    this.patBytes = s;
    const pat = new Map<number, number>();
    for (const p of parsePat(s).programs) pat.set(p.programNumber, p.pid);
    const pids = new Set(pat.values());
    for (const pid of this.readers.keys())
      if (pid !== PAT_PID && !pids.has(pid)) this.readers.delete(pid);
    for (const pid of pids)
      if (!this.readers.has(pid)) this.readers.set(pid, new SectionReader((x) => this.onPmt(x)));
    for (const pnr of this.pmts.keys()) if (!pat.has(pnr)) this.pmts.delete(pnr);
    this.pat = pat;
    this.onChange(null);
  }

  private onPmt(s: Buffer): void {
    if (s[0] !== PMT_TABLE_ID) return;
    const pmt = parsePmt(s);
    if (!this.pat?.has(pmt.programNumber)) return;
    const prev = this.pmts.get(pmt.programNumber);
    if (prev && prev.version === pmt.version) return;
    this.pmts.set(pmt.programNumber, pmt);
    this.onChange(pmt);
  }
}
