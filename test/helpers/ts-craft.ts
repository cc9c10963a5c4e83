// Crafted MPEG-TS for tests: packets with chosen header fields, PSI sections with a real
// CRC-32/MPEG-2, PES headers with PTS. Written independently of the native analyzer under test.

export const PKT = 188;

export interface PacketFields {
  pid: number;
  cc?: number;
  pusi?: boolean;
  tei?: boolean;
  scrambling?: number;
  /** Payload bytes (padded with 0xFF); omit for an adaptation-only packet. */
  payload?: Buffer;
  /** PCR in 27 MHz units: adds an adaptation field carrying it. */
  pcr?: number;
  discontinuity?: boolean;
  /** Force an adaptation field even without PCR. */
  adaptation?: boolean;
}

export function packet(f: PacketFields): Buffer {
  const p = Buffer.alloc(PKT, 0xff);
  p[0] = 0x47;
  p[1] = (f.tei ? 0x80 : 0) | (f.pusi ? 0x40 : 0) | ((f.pid >> 8) & 0x1f);
  p[2] = f.pid & 0xff;
  const hasAf = f.pcr !== undefined || f.discontinuity || f.adaptation || !f.payload;
  const hasPayload = f.payload !== undefined;
  const afc = (hasAf ? 2 : 0) | (hasPayload ? 1 : 0);
  p[3] = ((f.scrambling ?? 0) << 6) | (afc << 4) | ((f.cc ?? 0) & 0x0f);
  let off = 4;
  if (hasAf) {
    const payloadLen = f.payload?.length ?? 0;
    const afLen = hasPayload ? Math.max(1 + (f.pcr !== undefined ? 6 : 0), 183 - payloadLen) : 183;
    p[4] = afLen;
    p[5] = (f.discontinuity ? 0x80 : 0) | (f.pcr !== undefined ? 0x10 : 0);
    if (f.pcr !== undefined) {
      const base = Math.floor(f.pcr / 300);
      const ext = f.pcr % 300;
      p[6] = Math.floor(base / 2 ** 25) & 0xff;
      p[7] = Math.floor(base / 2 ** 17) & 0xff;
      p[8] = Math.floor(base / 2 ** 9) & 0xff;
      p[9] = Math.floor(base / 2) & 0xff;
      p[10] = ((base & 1) << 7) | 0x7e | ((ext >> 8) & 1);
      p[11] = ext & 0xff;
    }
    off = 5 + afLen;
  }
  if (f.payload) f.payload.copy(p, off, 0, Math.min(f.payload.length, PKT - off));
  return p;
}

let crcTable: Uint32Array | undefined;
export function crc32mpeg(b: Buffer): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let i = 0; i < 256; i++) {
      let c = i << 24;
      for (let k = 0; k < 8; k++) c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
      crcTable[i] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const byte of b) crc = ((crc << 8) ^ crcTable[((crc >>> 24) ^ byte) & 0xff]!) >>> 0;
  return crc >>> 0;
}

/** A long-form section (section_syntax_indicator 1) with CRC; `badCrc` flips the CRC. */
export function section(tableId: number, ext: number, body: Buffer, version = 0, badCrc = false) {
  const len = 5 + body.length + 4;
  const head = Buffer.from([
    tableId,
    0xb0 | ((len >> 8) & 0x0f),
    len & 0xff,
    ext >> 8,
    ext & 0xff,
    0xc1 | ((version & 0x1f) << 1),
    0,
    0,
  ]);
  const s = Buffer.concat([head, body, Buffer.alloc(4)]);
  const crc = crc32mpeg(s.subarray(0, s.length - 4)) ^ (badCrc ? 1 : 0);
  s.writeUInt32BE(crc >>> 0, s.length - 4);
  return s;
}

export function pat(programs: Array<{ pnr: number; pid: number }>, version = 0, tsId = 1) {
  const body = Buffer.alloc(programs.length * 4);
  programs.forEach((p, i) => {
    body.writeUInt16BE(p.pnr, i * 4);
    body.writeUInt16BE(0xe000 | p.pid, i * 4 + 2);
  });
  return section(0x00, tsId, body, version);
}

export interface EsDef {
  type: number;
  pid: number;
  lang?: string;
  descriptors?: Buffer;
}

export function pmt(pnr: number, pcrPid: number, streams: EsDef[], version = 0) {
  const parts: Buffer[] = [Buffer.from([0xe0 | (pcrPid >> 8), pcrPid & 0xff, 0xf0, 0x00])];
  for (const s of streams) {
    let desc = s.descriptors ?? Buffer.alloc(0);
    if (s.lang)
      desc = Buffer.concat([desc, Buffer.from([0x0a, 4]), Buffer.from(s.lang), Buffer.from([0])]);
    parts.push(
      Buffer.from([
        s.type,
        0xe0 | (s.pid >> 8),
        s.pid & 0xff,
        0xf0 | (desc.length >> 8),
        desc.length & 0xff,
      ]),
      desc,
    );
  }
  return section(0x02, pnr, Buffer.concat(parts), version);
}

export function sdt(services: Array<{ id: number; name: string; provider: string }>) {
  const parts: Buffer[] = [Buffer.from([0x00, 0x01, 0xff])]; // original_network_id, reserved
  for (const s of services) {
    const prov = Buffer.from(s.provider, 'latin1');
    const name = Buffer.from(s.name, 'latin1');
    const desc = Buffer.concat([
      Buffer.from([0x48, 3 + prov.length + name.length, 0x01, prov.length]),
      prov,
      Buffer.from([name.length]),
      name,
    ]);
    parts.push(
      Buffer.from([s.id >> 8, s.id & 0xff, 0xfc, 0x80 | (desc.length >> 8), desc.length & 0xff]),
      desc,
    );
  }
  return section(0x42, 1, Buffer.concat(parts));
}

/** Packets carrying sections on `pid` (pointer_field 0, packed back to back, spanning packets). */
export function psiPackets(pid: number, sections: Buffer[], cc = { n: 0 }): Buffer[] {
  const data = Buffer.concat([Buffer.from([0]), ...sections]);
  const out: Buffer[] = [];
  for (let o = 0; o < data.length; o += 184) {
    out.push(packet({ pid, cc: cc.n++ & 15, pusi: o === 0, payload: data.subarray(o, o + 184) }));
  }
  return out;
}

/** Write a 33-bit PTS (90 kHz) as the 5-byte PES field at `at` ('0010' prefix: PTS only). */
export function putPts(h: Buffer, at: number, pts: number): void {
  h[at] = 0x21 | ((Math.floor(pts / 2 ** 30) & 7) << 1);
  h[at + 1] = (pts >> 22) & 0xff;
  h[at + 2] = (((pts >> 15) & 0x7f) << 1) | 1;
  h[at + 3] = (pts >> 7) & 0xff;
  h[at + 4] = ((pts & 0x7f) << 1) | 1;
}

/** A PES start with a PTS (90 kHz). */
export function pesWithPts(pid: number, cc: number, pts: number): Buffer {
  const h = Buffer.alloc(14);
  h.set([0, 0, 1, 0xe0, 0, 0, 0x80, 0x80, 5]);
  putPts(h, 9, pts);
  return packet({ pid, cc, pusi: true, payload: h });
}

export const nullPacket = (): Buffer => packet({ pid: 0x1fff, payload: Buffer.alloc(184, 0xff) });

export const PMT_PID = 0x100;
export const VIDEO_PID = 0x101;
export const AUDIO_PID = 0x102;
const TICK_MS = 10;
const PACKETS_PER_TICK = 20; // 20 × 188 × 8 / 10 ms = 3.008 Mbit/s, constant

export interface Tick {
  /** Arrival time of this group of packets (ms). */
  t: number;
  packets: Buffer[];
}

export interface CleanStreamOptions {
  ms: number;
  /** Return false to leave a packet out: (pid, t, kind) with kind pat|pmt|pcr|pes|data|null. */
  keep?: (pid: number, t: number, kind: string) => boolean;
  /** Change a PCR value before it is written. */
  pcrAt?: (t: number, pcr: number) => { pcr: number; discontinuity?: boolean };
  /** Make a data packet scrambled. */
  scrambled?: (pid: number, t: number) => boolean;
}

/**
 * A constant-rate single-programme TS in 10 ms ticks: PAT + PMT every 100 ms, PCR on the video
 * PID every 20 ms (first packet of the tick, so PCR and byte position agree exactly), a PTS on
 * video and audio every 40 ms, video data, and null packets up to 20 packets per tick.
 */
export function cleanStream(o: CleanStreamOptions): Tick[] {
  const keep = o.keep ?? (() => true);
  const cc = new Map<number, number>();
  const next = (pid: number) => {
    const v = cc.get(pid) ?? 0;
    cc.set(pid, (v + 1) & 15);
    return v;
  };
  const patSec = pat([{ pnr: 1, pid: PMT_PID }]);
  const pmtSec = pmt(1, VIDEO_PID, [
    { type: 0x1b, pid: VIDEO_PID },
    { type: 0x0f, pid: AUDIO_PID, lang: 'eng' },
  ]);
  const ticks: Tick[] = [];
  for (let t = 0; t < o.ms; t += TICK_MS) {
    const pk: Buffer[] = [];
    if (t % 20 === 0 && keep(VIDEO_PID, t, 'pcr')) {
      const want = o.pcrAt ? o.pcrAt(t, t * 27000) : { pcr: t * 27000 };
      pk.push(packet({ pid: VIDEO_PID, pcr: want.pcr, discontinuity: want.discontinuity }));
    }
    if (t % 100 === 0) {
      if (keep(0, t, 'pat'))
        pk.push(
          packet({
            pid: 0,
            cc: next(0),
            pusi: true,
            payload: Buffer.concat([Buffer.from([0]), patSec]),
          }),
        );
      if (keep(PMT_PID, t, 'pmt'))
        pk.push(
          packet({
            pid: PMT_PID,
            cc: next(PMT_PID),
            pusi: true,
            payload: Buffer.concat([Buffer.from([0]), pmtSec]),
          }),
        );
    }
    if (t % 40 === 0) {
      const pts = t * 90;
      if (keep(VIDEO_PID, t, 'pes')) pk.push(pesWithPts(VIDEO_PID, next(VIDEO_PID), pts));
      if (keep(AUDIO_PID, t, 'pes')) pk.push(pesWithPts(AUDIO_PID, next(AUDIO_PID), pts));
    }
    for (let i = 0; i < 8; i++) {
      if (!keep(VIDEO_PID, t, 'data')) break;
      const scr = o.scrambled?.(VIDEO_PID, t) ? 2 : 0;
      pk.push(
        packet({
          pid: VIDEO_PID,
          cc: next(VIDEO_PID),
          payload: Buffer.alloc(184, i),
          scrambling: scr,
        }),
      );
    }
    if (keep(AUDIO_PID, t, 'data'))
      pk.push(packet({ pid: AUDIO_PID, cc: next(AUDIO_PID), payload: Buffer.alloc(184, 7) }));
    while (pk.length < PACKETS_PER_TICK) pk.push(nullPacket());
    ticks.push({ t, packets: pk });
  }
  return ticks;
}
