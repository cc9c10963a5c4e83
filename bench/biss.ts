// Benchmark: BISS descrambling throughput of the native descrambler (src/native/biss.ts over
// native/ts/biss.cc) beside libdvbcsa's own batch loop (bench/biss-bound.c, built with cc -O2
// -ldvbcsa here): the same 80 Mbit/s-shaped multiplex of 10 programmes, every elementary packet
// scrambled, PAT and PMTs every 100 ms, a PCR adaptation field on one packet in 20; the same
// receiver-sized batches (64 datagrams of 7 packets), each copied from the pristine scrambled
// buffer before it is descrambled (by both), same run. Two cases: one BISS-1 key for every
// programme (one session word per feed, the common case: full bitslice batches), and a key per
// programme (ten batches per receiver batch, each flushed at its end by both contenders). Ours
// also follows the PAT/PMTs, looks up each PID's target and checks every PES start.
// Figure: Mbit/s of multiplex per core (single thread).
// Run: npx tsx bench/biss.ts [seconds-per-contender, default 6]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BissDescrambler, bissControlWord, bissScramble } from '../src/native/biss.ts';
import { packet, pat, pmt, psiPackets } from '../test/helpers/ts-craft.ts';
import { benchHeader } from './lib/header.ts';

const PKT = 188;
const BATCH = 64 * 7 * PKT;
const SECONDS = Number(process.argv[2] ?? 6);
const ROUNDS = 3;
const PROGRAMMES = 10;
const RATE_BPS = 80_000_000;
const KEY = '123456ABCDEF';

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
  const out: Buffer[] = [];
  let n = 0;
  for (let ms = 0; ms < 1000; ms += 10) {
    if (ms % 100 === 0) {
      const tables = psiPackets(0, [pat(progs.map((p) => ({ pnr: p.pnr, pid: p.pmtPid })))], c(0));
      for (const p of progs) {
        const streams = [
          { type: 0x1b, pid: p.es[0]! },
          { type: 0x0f, pid: p.es[1]! },
        ];
        tables.push(...psiPackets(p.pmtPid, [pmt(p.pnr, p.es[0]!, streams)], c(p.pmtPid)));
      }
      out.push(...tables);
      n += tables.length;
    }
    const target = Math.floor((total * (ms + 10)) / 1000);
    for (let k = 0; n < target; k++, n++) {
      const p = progs[k % PROGRAMMES]!;
      const pid = p.es[k % 7 === 0 ? 1 : 0]!;
      const count = c(pid).n++;
      const pusi = count % 30 === 0;
      const payload = Buffer.alloc(pusi || count % 20 === 1 ? 176 : 184, k & 0xff);
      if (pusi) payload.set([0, 0, 1, 0xe0]);
      out.push(
        packet({
          pid,
          cc: count & 15,
          pusi,
          payload,
          ...(count % 20 === 1 ? { pcr: count * 27_000 } : {}),
        }),
      );
    }
  }
  const ts = Buffer.concat(out);
  return { ts: ts.subarray(0, ts.length - (ts.length % BATCH)), progs };
}

function measure(seconds: number, bytesPerPass: number, pass: () => void): number {
  pass(); // warm-up
  const start = process.hrtime.bigint();
  let passes = 0;
  let el = 0;
  while (el < seconds) {
    pass();
    passes++;
    el = Number(process.hrtime.bigint() - start) / 1e9;
  }
  return (passes * bytesPerPass * 8) / el / 1e6;
}

function keyOf(i: number, distinct: boolean): string {
  return distinct ? `123456ABCD${(0x10 + i).toString(16).toUpperCase()}` : KEY;
}

function run(
  dir: string,
  bound: string,
  distinct: boolean,
): { ours: number; c: number; note: string } {
  const { ts, progs } = makeMpts();
  let scrambled = 0;
  progs.forEach((p, i) => {
    scrambled += bissScramble(ts, keyOf(i, distinct), p.es, 2);
  });
  const file = join(dir, 'mpts.ts');
  writeFileSync(file, ts);
  const map = progs
    .flatMap((p, i) =>
      p.es.map((pid) => `${pid}:${bissControlWord(keyOf(i, distinct)).toString('hex')}`),
    )
    .join(',');
  // Our descrambler keeps its PSI state from pass to pass (as on a live stream).
  const d = new BissDescrambler(progs.map((p, i) => ({ pnr: p.pnr, key: keyOf(i, distinct) })));
  const work = Buffer.alloc(BATCH);
  const batches = Array.from({ length: ts.length / BATCH }, (_, i) =>
    ts.subarray(i * BATCH, (i + 1) * BATCH),
  );
  const best = { ours: 0, c: 0 };
  const slice = SECONDS / ROUNDS;
  for (let r = 0; r < ROUNDS; r++) {
    best.ours = Math.max(
      best.ours,
      measure(slice, ts.length, () => {
        for (const b of batches) {
          b.copy(work);
          d.process(work);
        }
      }),
    );
    const c = JSON.parse(execFileSync(bound, [file, String(slice), map], { encoding: 'utf8' })) as {
      bytes: number;
      seconds: number;
    };
    best.c = Math.max(best.c, (c.bytes * 8) / c.seconds / 1e6);
  }
  const st = d.stats();
  const ok = st.targets.reduce((a, x) => a + x.pesOk, 0);
  const bad = st.targets.reduce((a, x) => a + x.pesBad, 0);
  return {
    ...best,
    note: `${scrambled} of ${ts.length / PKT} packets scrambled; ours: ${ok} PES starts good, ${bad} bad`,
  };
}

function main(): void {
  benchHeader('biss');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-biss-'));
  try {
    const bound = join(dir, 'bound');
    execFileSync('cc', ['-O2', '-o', bound, join(import.meta.dirname, 'biss-bound.c'), '-ldvbcsa']);
    const one = run(dir, bound, false);
    const ten = run(dir, bound, true);
    console.log(
      `BISS descrambling of a ${RATE_BPS / 1e6} Mbit/s-shaped MPTS of ${PROGRAMMES} programmes, ` +
        `batches of ${BATCH / PKT} packets, libdvbcsa batch ${BissDescrambler.batchSize}, best of ` +
        `${ROUNDS} rounds, ${SECONDS} s per contender (one key: ${one.note}; ten keys: ${ten.note})`,
    );
    console.log(
      '| case | sluice BissDescrambler, Mbit/s per core | libdvbcsa batch loop (cc -O2) | ratio |',
    );
    console.log('|---|---|---|---|');
    for (const [name, r] of [
      ['one key for all 10 programmes', one],
      ['a key per programme (10)', ten],
    ] as const) {
      console.log(
        `| ${name} | ${r.ours.toFixed(0)} | ${r.c.toFixed(0)} | ${(r.ours / r.c).toFixed(2)} |`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
