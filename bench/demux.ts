// Benchmark: the demuxer's programme splitter taking 20 programmes out of an 80 Mbit/s MPTS
// (25 programmes, tables at broadcast rates: PAT and PMTs every 100 ms, SDT every 500 ms, EIT
// p/f of every service every 2 s), beside a C loop that only copies the same PIDs to 20
// outputs (bench/demux-bound.c, built here with `cc -O2 -march=native`, the fastest of -O2, -O3
// and either with -march=native on the Intel Xeon, 2026-11-28), same input, same batch size (64
// datagrams of 7 packets, what the UDP receiver hands over), same run. The splitter also
// reassembles every table section (CRC-checking the bytes it has not checked before; a repeat
// is recognised by comparing its bytes), reads PAT and PMT, gives each programme its own PAT,
// PMT and SDT on its own continuity counters and cuts its EIT, so the ratio is a floor. The
// input is one second of multiplex looped, so tables repeat as a real multiplex's do (EIT p/f
// every 2 s on air, every pass here). Figure: CPU per Gbit/s of multiplex (one core, single
// thread).
// Run: npx tsx bench/demux.ts [seconds-per-contender, default 6]
// Env: SLUICE_BENCH_KINDS=native,ts,c (default all; e.g. `native` alone while profiling).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { routePackets } from '../src/mpegts/pid-router.ts';
import { ProgrammeSplitter } from '../src/mpegts/programme-splitter.ts';
import { nativeRoutePackets } from '../src/native/pid-router.ts';
import { packet, pat, pmt, psiPackets, sdt, section } from '../test/helpers/ts-craft.ts';
import { benchHeader } from './lib/header.ts';

const PKT = 188;
const BATCH = 64 * 7 * PKT;
const SECONDS = Number(process.argv[2] ?? 6);
const ROUNDS = 3;
const PROGRAMMES = 25;
const DEMUXED = 20;
const RATE_BPS = 80_000_000;
const KINDS = (process.env['SLUICE_BENCH_KINDS'] ?? 'native,ts,c').split(',');
/** The peer at its best on this machine (see the header). */
const PEER_CFLAGS = ['-O2', '-march=native'];

interface Prog {
  pnr: number;
  pmtPid: number;
  es: number[];
}

function makeMpts(): { ts: Buffer; progs: Prog[] } {
  const progs: Prog[] = Array.from({ length: PROGRAMMES }, (_, i) => ({
    pnr: 101 + i,
    pmtPid: 0x100 + i * 0x10,
    es: [0x101 + i * 0x10, 0x102 + i * 0x10],
  }));
  const total = Math.floor(RATE_BPS / 8 / PKT); // one second
  const cc = new Map<number, { n: number }>();
  const c = (pid: number) => cc.get(pid) ?? cc.set(pid, { n: 0 }).get(pid)!;
  const eit = (pnr: number) => section(0x4e, pnr, Buffer.alloc(6 + 60, 0x20));
  const out: Buffer[] = [];
  let n = 0;
  for (let ms = 0; ms < 1000; ms += 10) {
    const tables: Buffer[] = [];
    if (ms % 100 === 0) {
      tables.push(...psiPackets(0, [pat(progs.map((p) => ({ pnr: p.pnr, pid: p.pmtPid })))], c(0)));
      for (const p of progs) {
        const streams = [
          { type: 0x1b, pid: p.es[0]! },
          { type: 0x0f, pid: p.es[1]! },
        ];
        tables.push(...psiPackets(p.pmtPid, [pmt(p.pnr, p.es[0]!, streams)], c(p.pmtPid)));
      }
    }
    if (ms % 500 === 0) {
      const services = progs.map((p) => ({ id: p.pnr, name: `Channel ${p.pnr}`, provider: 'B' }));
      tables.push(...psiPackets(0x11, [sdt(services)], c(0x11)));
    }
    if (ms % 2000 === 0)
      tables.push(
        ...psiPackets(
          0x12,
          progs.map((p) => eit(p.pnr)),
          c(0x12),
        ),
      );
    out.push(...tables);
    n += tables.length;
    const target = Math.floor((total * (ms + 10)) / 1000);
    for (let k = 0; n < target; k++, n++) {
      const p = progs[k % PROGRAMMES]!;
      const pid = p.es[k % 7 === 0 ? 1 : 0]!;
      out.push(packet({ pid, cc: c(pid).n++ & 15, payload: Buffer.alloc(184, k & 0xff) }));
    }
  }
  const ts = Buffer.concat(out);
  return { ts: ts.subarray(0, ts.length - (ts.length % BATCH)), progs };
}

function main(): void {
  benchHeader('demux');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-demux-'));
  try {
    const { ts, progs } = makeMpts();
    const file = join(dir, 'mpts.ts');
    writeFileSync(file, ts);
    const bound = join(dir, 'bound');
    execFileSync('cc', [...PEER_CFLAGS, '-o', bound, join(import.meta.dirname, 'demux-bound.c')]);
    // The C loop copies what the demuxers pass: each programme's PMT and ES PIDs to its output,
    // PAT, SDT and EIT to every output.
    const map = [
      '0:255',
      '17:255',
      '18:255',
      ...progs.slice(0, DEMUXED).flatMap((p, i) => [p.pmtPid, ...p.es].map((pid) => `${pid}:${i}`)),
    ].join(',');

    // As the demuxer runs it (the native core's router), and with the TypeScript reference.
    let outBytes = 0;
    const splitterOf = (router: typeof routePackets) => {
      const sp = new ProgrammeSplitter(router);
      for (const p of progs.slice(0, DEMUXED)) {
        sp.add(p.pnr, { packets: (b) => (outBytes += b.length) });
      }
      return sp;
    };
    const splitter = splitterOf(nativeRoutePackets);
    const tsSplitter = splitterOf(routePackets);
    const batches = Array.from({ length: ts.length / BATCH }, (_, i) =>
      ts.subarray(i * BATCH, (i + 1) * BATCH),
    );
    const best = { js: 0, ts: 0, c: 0 };
    const slice = SECONDS / ROUNDS;
    for (let r = 0; r < ROUNDS; r++) {
      if (KINDS.includes('native')) {
        best.js = Math.max(
          best.js,
          measure(slice, ts.length, () => {
            for (const b of batches) splitter.push(b);
          }),
        );
      }
      if (KINDS.includes('ts')) {
        best.ts = Math.max(
          best.ts,
          measure(slice, ts.length, () => {
            for (const b of batches) tsSplitter.push(b);
          }),
        );
      }
      if (!KINDS.includes('c')) continue;
      const c = JSON.parse(
        execFileSync(bound, [file, String(slice), map], { encoding: 'utf8' }),
      ) as {
        bytes: number;
        seconds: number;
      };
      best.c = Math.max(best.c, (c.bytes * 8) / c.seconds / 1e9);
    }
    const perGbit = (gbps: number) => `${((1 / gbps) * 100).toFixed(1)} %`;
    const st = splitter.stats();
    console.log(
      `demux ${DEMUXED} of ${PROGRAMMES} programmes from an ${RATE_BPS / 1e6} Mbit/s MPTS, ` +
        `batches of ${BATCH / PKT} packets, best of ${ROUNDS} rounds, ${SECONDS} s per contender ` +
        `(splitter: ${st.crcErrors} CRC errors, ${st.programmes} programmes, ` +
        `${(outBytes / 1e6).toFixed(0)} MB out)`,
    );
    console.log('| contender | Gbit/s of multiplex | CPU of one core per Gbit/s | × C bound |');
    console.log('|---|---|---|---|');
    const row = (name: string, g: number) =>
      console.log(`| ${name} | ${g.toFixed(2)} | ${perGbit(g)} | ${(g / best.c).toFixed(2)} |`);
    row('sluice programme splitter, native router (as the demuxer runs it)', best.js);
    row('sluice programme splitter, TypeScript router (the reference)', best.ts);
    row(`C loop bound (PID lookup + copy only, cc ${PEER_CFLAGS.join(' ')})`, best.c);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function measure(seconds: number, bytesPerPass: number, pass: () => void): number {
  for (let i = 0; i < 3; i++) pass(); // warm-up (JIT)
  const start = process.hrtime.bigint();
  let passes = 0;
  let el = 0;
  while (el < seconds) {
    pass();
    passes++;
    el = Number(process.hrtime.bigint() - start) / 1e9;
  }
  return (passes * bytesPerPass * 8) / el / 1e9;
}

main();
