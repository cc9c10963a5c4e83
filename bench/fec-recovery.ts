// Benchmark: SMPTE 2022-1 FEC recovery throughput of the prompeg input's receive path in
// TypeScript (parseRtp → FecDecoder.pushMedia → reorder buffer; parseFec → FecDecoder.pushFec,
// XOR recovery, iterated row/column retries) beside a C peer doing the same work
// (bench/fec-recovery-peer.c, built with cc -O2 here), in the same run, on the same prepared
// events: a 50 Mbit/s stream (TS bytes) as RTP of 7 TS packets, 5 × 5 2-D FEC (ffmpeg's
// default), 2 % of media packets dropped (seeded), FEC kept. Sockets are not part of it: this is
// the recovery work the input adds on top of an rtp input.
// The goal (issue 21): ≥ 50 Mbit/s of stream at 2 % loss per 5 % of one core.
// Run: npx tsx bench/fec-recovery.ts [seconds of CPU per contender, default 3]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FecDecoder } from '../src/protocols/fec/decoder.ts';
import { FecEncoder } from '../src/protocols/fec/encoder.ts';
import { parseFec } from '../src/protocols/fec/header.ts';
import { parseRtp, RtpSequencer } from '../src/protocols/rtp/packet.ts';
import { seededRandom } from '../test/helpers/lossy-relay.ts';
import { benchHeader } from './lib/header.ts';

const SECONDS = Number(process.argv[2] ?? 3);
const STREAM_BPS = 50_000_000;
const PAYLOAD = 7 * 188;
const STREAM_SECONDS = 4; // prepared once, replayed
const LOSS = 0.02;
const L = 5;
const D = 5;

interface Ev {
  fec: boolean;
  d: Buffer;
}

function prepare(): { events: Ev[]; media: number; dropped: number } {
  const packets = Math.round((STREAM_BPS / 8 / PAYLOAD) * STREAM_SECONDS);
  const rand = seededRandom(2022);
  const events: Ev[] = [];
  let dropped = 0;
  const enc = new FecEncoder({ l: L, d: D, rows: true, xor: 0 }, (_k, d) =>
    events.push({ fec: true, d }),
  );
  for (let i = 0; i < packets; i++) {
    const d = Buffer.alloc(12 + PAYLOAD);
    d[0] = 0x80;
    d[1] = 33;
    d.writeUInt16BE(i & 0xffff, 2);
    d.writeUInt32BE((i * 300) >>> 0, 4);
    d.writeUInt32BE(0x5eed, 8);
    for (let o = 12; o < d.length; o += 188) {
      d[o] = 0x47;
      for (let k = 1; k < 188; k += 4) d[o + k] = (rand() * 256) | 0;
    }
    enc.push(d);
    if (rand() < LOSS) dropped++;
    else events.push({ fec: false, d });
  }
  return { events, media: packets, dropped };
}

/** The TypeScript receive path over the events, repeated until `seconds` of CPU are spent. */
function runTs(events: Ev[], seconds: number) {
  let rounds = 0;
  let recovered = 0;
  let lost = 0;
  const t0 = process.cpuUsage();
  const cpu = () => {
    const u = process.cpuUsage(t0);
    return (u.user + u.system) / 1e6;
  };
  let out = 0;
  while (cpu() < seconds) {
    const seq = new RtpSequencer(true, (p) => {
      out += p.payload.length;
    });
    const dec = new FecDecoder((d) => {
      const p = parseRtp(d);
      if (p) seq.push(p);
    });
    for (const e of events) {
      if (e.fec) {
        const f = parseFec(e.d);
        if (typeof f !== 'string') {
          dec.pushFec(f);
          seq.depth = dec.window();
        }
      } else {
        const p = parseRtp(e.d);
        if (p && dec.pushMedia(e.d, p.seq, p.ssrc)) seq.push(p);
      }
    }
    seq.flush();
    recovered += dec.stats.recovered;
    lost += seq.lost;
    rounds++;
  }
  return { rounds, recovered, lost, seconds: cpu(), out };
}

function main(): void {
  benchHeader('fec-recovery');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-fec-'));
  try {
    const { events, media, dropped } = prepare();
    const file = join(dir, 'events.bin');
    const parts: Buffer[] = [];
    for (const e of events) {
      const h = Buffer.alloc(3);
      h[0] = e.fec ? 1 : 0;
      h.writeUInt16LE(e.d.length, 1);
      parts.push(h, e.d);
    }
    writeFileSync(file, Buffer.concat(parts));
    const peer = join(dir, 'peer');
    execFileSync('cc', ['-O2', '-o', peer, join(import.meta.dirname, 'fec-recovery-peer.c')]);

    // Shared machine: three alternating rounds each, best kept.
    const streamMbit = (STREAM_BPS / 1e6) * STREAM_SECONDS; // Mbit per replay
    let bestTs = 0;
    let bestC = 0;
    let tsRec = { recovered: 0, lost: 0, rounds: 0 };
    let cRec = { recovered: 0, rounds: 0 };
    for (let r = 0; r < 3; r++) {
      const ts = runTs(events, SECONDS / 3);
      bestTs = Math.max(bestTs, (ts.rounds * streamMbit) / ts.seconds);
      tsRec = ts;
      const c = JSON.parse(
        execFileSync(peer, [file, String(SECONDS / 3)], { encoding: 'utf8' }),
      ) as { recovered: number; rounds: number; seconds: number };
      bestC = Math.max(bestC, (c.rounds * streamMbit) / c.seconds);
      cRec = c;
    }
    const per5 = (x: number) => (x * 0.05).toFixed(0);
    console.log(
      `prepared: ${STREAM_SECONDS} s of ${STREAM_BPS / 1e6} Mbit/s, ${media} media packets, ${dropped} dropped (${((100 * dropped) / media).toFixed(2)} %), ${events.length - (media - dropped)} FEC packets, ${L} × ${D} 2-D`,
    );
    console.log(
      `TypeScript: recovered ${tsRec.recovered / tsRec.rounds} per replay, given up ${tsRec.lost / tsRec.rounds}`,
    );
    console.log(`C peer:     recovered ${cRec.recovered / cRec.rounds} per replay`);
    console.log('| contender | Mbit/s of stream per core | per 5 % of a core | × C |');
    console.log('|---|---|---|---|');
    console.log(
      `| TypeScript (src/protocols/fec + reorder) | ${bestTs.toFixed(0)} | ${per5(bestTs)} | ${(bestTs / bestC).toFixed(2)} |`,
    );
    console.log(`| C peer (cc -O2) | ${bestC.toFixed(0)} | ${per5(bestC)} | 1.00 |`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
