// Measurements over captured transport stream bytes: the sections of a PID (CRC checked, by our
// own section reader), and PCR accuracy against a constant-rate position (TR 101 290 5.3.2):
// each PCR compared with the previous PCR of its PID advanced by the bytes in between at the
// nominal rate.
import { AF_DISCONTINUITY, pid as pidOf, TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { pcrDiff, readPcr } from '../../src/mpegts/pcr.ts';
import { SectionReader } from '../../src/mpegts/section-reader.ts';

/** Whole sections of `pid` in `ts` (aligned packets), in order; CRC failures left out. */
export function sectionsOf(ts: Buffer, pid: number): Buffer[] {
  const out: Buffer[] = [];
  const r = new SectionReader((s) => out.push(s));
  for (let o = 0; o + TS_PACKET_SIZE <= ts.length; o += TS_PACKET_SIZE) {
    if (pidOf(ts, o) === pid) r.packet(ts, o);
  }
  return out;
}

export interface PcrAccuracy {
  /** PCRs compared (a PCR after a discontinuity_indicator starts over). */
  count: number;
  /** Largest |error|, ns. */
  maxAbsNs: number;
  /** Per PID: largest |error|, ns. */
  byPid: Map<number, number>;
  /** Largest interval between two PCRs of a PID, by their values, ms. */
  maxGapMs: number;
}

/** PCR accuracy of every PCR PID in `ts` against `bitrate` bit/s. */
export function pcrAccuracy(ts: Buffer, bitrate: number): PcrAccuracy {
  const last = new Map<number, { pcr: number; at: number }>();
  const byPid = new Map<number, number>();
  let count = 0;
  let maxAbsNs = 0;
  let maxGapMs = 0;
  for (let o = 0; o + TS_PACKET_SIZE <= ts.length; o += TS_PACKET_SIZE) {
    const pcr = readPcr(ts, o);
    if (pcr < 0) continue;
    const p = pidOf(ts, o);
    const prev = last.get(p);
    last.set(p, { pcr, at: o });
    if (!prev || (ts[o + 5]! & AF_DISCONTINUITY) !== 0) continue;
    maxGapMs = Math.max(maxGapMs, pcrDiff(pcr, prev.pcr) / 27_000);
    const expected = prev.pcr + ((o - prev.at) * 8 * 27e6) / bitrate;
    const ns = Math.abs(pcrDiff(pcr, expected)) / 0.027;
    count++;
    maxAbsNs = Math.max(maxAbsNs, ns);
    byPid.set(p, Math.max(byPid.get(p) ?? 0, ns));
  }
  return { count, maxAbsNs, byPid, maxGapMs };
}
