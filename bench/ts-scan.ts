// Benchmark: TS scan + TR 101 290 throughput of the native analyzer, beside a plain TypeScript
// loop doing the hot-path work and a C loop bound (bench/ts-scan-bound.c, built with cc here),
// all on the same cache-resident input in datagram-sized (7 × 188) batches, in the same run.
// Equal work: the C bound and the TypeScript loop do only the per-packet hot path (sync, CC,
// PCR, PTS); the native analyzer does that and more (PSI reassembly with CRC, the programme
// map, per-PID timing and bit rates, zero-copy output bookkeeping), so the ratio is a floor.
// The C bound is built with `cc -O2` here, its best plain build.
// Run: npx tsx bench/ts-scan.ts [seconds-per-contender, default 6]   Figures: printed; copy them to bench/RESULTS.md.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TsAnalyzer } from '../src/native/ts.ts';
import { makeLavfiTs } from '../test/helpers/ffmpeg.ts';
import { benchHeader } from './lib/header.ts';

const PKT = 188;
const DGRAM = 7 * PKT;
const DATAGRAMS = 256; // 337 KB: stays in cache
const SECONDS = Number(process.argv[2] ?? 6);
const ROUNDS = 6;

function main(): void {
  benchHeader('ts-scan');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  try {
    const file = join(dir, 'in.ts');
    makeLavfiTs(file, { size: '640x360', seconds: 3, muxrate: 8_000_000 });
    const all = readFileSync(file);
    const input = Buffer.from(all.subarray(0, DATAGRAMS * DGRAM));
    const grams = Array.from({ length: DATAGRAMS }, (_, i) =>
      input.subarray(i * DGRAM, (i + 1) * DGRAM),
    );

    // The UDP receiver hands over up to 64 datagrams per batch: the call size the stream driver uses.
    const batches = Array.from({ length: DATAGRAMS / 64 }, (_, i) =>
      input.subarray(i * 64 * DGRAM, (i + 1) * 64 * DGRAM),
    );
    const native = new TsAnalyzer();
    const nativeBatch = new TsAnalyzer();
    const js = new JsScan();
    const bound = join(dir, 'bound');
    execFileSync('cc', ['-O2', '-o', bound, join(import.meta.dirname, 'ts-scan-bound.c')]);

    // The machine is shared: contenders take turns over ROUNDS rounds and each keeps its best
    // round, so a burst of load elsewhere does not land on one contender only.
    const best = { native: 0, nativeBatch: 0, js: 0, c: 0 };
    const slice = SECONDS / ROUNDS;
    for (let r = 0; r < ROUNDS; r++) {
      best.native = Math.max(
        best.native,
        measure(slice, (now) => {
          for (const g of grams) {
            now += 0.005;
            native.push(g, now);
          }
          return now;
        }),
      );
      best.nativeBatch = Math.max(
        best.nativeBatch,
        measure(slice, (now) => {
          for (const b of batches) {
            now += 0.3;
            nativeBatch.push(b, now);
          }
          return now;
        }),
      );
      best.js = Math.max(
        best.js,
        measure(slice, (now) => {
          for (const g of grams) {
            now += 0.005;
            js.scan(g, now);
          }
          return now;
        }),
      );
      const c = JSON.parse(execFileSync(bound, [file, String(slice)], { encoding: 'utf8' })) as {
        bytes: number;
        seconds: number;
      };
      best.c = Math.max(best.c, (c.bytes * 8) / c.seconds / 1e9);
    }
    const cRate = best.c;
    const nativeRate = best.native;
    const nativeBatchRate = best.nativeBatch;
    const jsRate = best.js;

    const row = (name: string, gbps: number) =>
      `| ${name} | ${gbps.toFixed(2)} | ${(gbps / cRate).toFixed(2)} |`;
    console.log(
      `TS scan + TR 101 290, ${DATAGRAMS} datagrams of ${DGRAM} bytes, best of ${ROUNDS} rounds, ${SECONDS} s each`,
    );
    console.log('| contender | Gbit/s | × C bound |');
    console.log('|---|---|---|');
    console.log(row('sluice native (TsAnalyzer.push per datagram, full TR 101 290)', nativeRate));
    console.log(row('sluice native, one push per 64-datagram receiver batch', nativeBatchRate));
    console.log(row('plain TypeScript loop (sync, CC, PCR, PTS only)', jsRate));
    console.log(row('C loop bound (same hot-path work, cc -O2)', cRate));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function measure(seconds: number, pass: (now: number) => number): number {
  let now = 0;
  for (let i = 0; i < 20; i++) now = pass(now); // warm-up (JIT)
  const start = process.hrtime.bigint();
  let bytes = 0;
  let el = 0;
  while (el < seconds) {
    now = pass(now);
    bytes += DATAGRAMS * DGRAM;
    el = Number(process.hrtime.bigint() - start) / 1e9;
  }
  return (bytes * 8) / el / 1e9;
}

/** The hot-path work in plain TypeScript, as a reader would first write it. */
class JsScan {
  private cc = new Uint8Array(8192);
  private valid = new Uint8Array(8192);
  private packets = new Float64Array(8192);
  private lastPcr = new Float64Array(8192);
  private lastPts = new Float64Array(8192);
  ccErrors = 0;

  scan(b: Buffer, now: number): void {
    for (let o = 0; o + PKT <= b.length; o += PKT) {
      if (b[o] !== 0x47) continue;
      const pid = ((b[o + 1]! & 0x1f) << 8) | b[o + 2]!;
      this.packets[pid]!++;
      if (pid === 0x1fff || b[o + 1]! & 0x80) continue;
      const afc = (b[o + 3]! >> 4) & 3;
      const cc = b[o + 3]! & 15;
      let off = 4;
      let disc = false;
      if (afc & 2) {
        const alen = b[o + 4]!;
        if (alen > 183) continue;
        if (alen) {
          disc = (b[o + 5]! & 0x80) !== 0;
          if (b[o + 5]! & 0x10 && alen >= 7) {
            const base =
              b[o + 6]! * 2 ** 25 +
              b[o + 7]! * 2 ** 17 +
              b[o + 8]! * 2 ** 9 +
              b[o + 9]! * 2 +
              (b[o + 10]! >> 7);
            this.lastPcr[pid] = base * 300 + ((b[o + 10]! & 1) << 8) + b[o + 11]!;
          }
        }
        off = 5 + alen;
      }
      if (!(afc & 1)) continue;
      if (this.valid[pid] && !disc && cc !== ((this.cc[pid]! + 1) & 15) && cc !== this.cc[pid])
        this.ccErrors++;
      this.cc[pid] = cc;
      this.valid[pid] = 1;
      const p = o + off;
      if (
        b[o + 1]! & 0x40 &&
        off + 14 <= PKT &&
        b[p] === 0 &&
        b[p + 1] === 0 &&
        b[p + 2] === 1 &&
        b[p + 7]! & 0x80
      ) {
        this.lastPts[pid] = now;
      }
    }
  }
}

main();
