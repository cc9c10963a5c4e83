// Benchmark: what viewer authorisation costs delivery (issue 19). Two sluice servers, each
// packaging the same ~4 Mbit/s feed (ffmpeg looping one file into each over UDP) as HLS-TS
// with 4 s segments (~2 MB): "open" has no billing servers, so its plain requests go to the
// native live engine as in production; "gated" has one (a node:http billing server that
// allows everyone), a verdict cache longer than the run and loopback not anonymous, so every
// request carries `?token=` and is judged by the gate from a cached verdict, then answered by
// the app. Equal work: the same wrk, the same connections, the newest live segment and the
// live playlist of each side, fetched afresh each round; segment throughput is compared per
// byte (live segments differ in size by a few %). Sides alternate in order each round.
// Run: npx tsx bench/billing.ts [wrk seconds, default 5] [rounds, default 5]
// Figures: bench/RESULTS.md, "Billing".
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { startBilling } from '../test/helpers/billing.ts';
import { freePort, startServer, type Teardown, waitFor } from '../test/helpers/server.ts';
import { wrk } from './http-peers.ts';
import { feedUdp, makeFeedFile } from './lib/feed.ts';
import { benchHeader } from './lib/header.ts';
import { procCpu } from './lib/proc.ts';

const WRK_S = Number(process.argv[2] ?? 5);
const ROUNDS = Number(process.argv[3] ?? 5);
const KBPS = 4000;
const SEGMENT_S = 4;
const SEGMENT_CONNECTIONS = 8;
const PLAYLIST_CONNECTIONS = 32;
const READY_MS = 90_000;
const TOKEN = 'bench-viewer';
/** Goals of issue 19: authorised ÷ unauthorised requests per second. */
const GOAL_PLAYLIST = 0.8;
const GOAL_SEGMENT = 0.9;

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;

async function main(): Promise<void> {
  benchHeader('billing');
  const cleanups: (() => unknown)[] = [];
  const t: Teardown = { teardown: (fn) => cleanups.push(fn) };
  const procs: ChildProcess[] = [];
  try {
    const file = `/tmp/sluice-bench-billing-${process.pid}.ts`;
    cleanups.push(() => rmSync(file, { force: true }));
    console.log('generating the feed …');
    makeFeedFile(file, KBPS, '1280x720');
    const billing = await startBilling(() => ({ status: 200 }));
    cleanups.push(() => billing.close());
    const stream = (port: number) => ({
      id: 1,
      'stream-name': 'big',
      pause: false,
      'ott-hls': 1,
      'ott-segment-duration': SEGMENT_S,
      'ott-window': 6,
      input: [{ type: 'udp', port, 'bind-if': '127.0.0.1' }],
    });
    const [openPort, gatedPort] = [await freePort(), await freePort()];
    const open = await startServer(t, { config: { stream: [stream(openPort)] } });
    cleanups.push(() => open.stop());
    const gated = await startServer(t, {
      config: {
        stream: [stream(gatedPort)],
        cs: {
          'verdict-cache-sec': 3600,
          'loopback-anonymous': false,
          'interim-sec': 0,
          server: [{ id: 1, name: 'bench', password: 'k', url: billing.url }],
        },
      },
    });
    cleanups.push(() => gated.stop());
    procs.push(feedUdp(file, openPort), feedUdp(file, gatedPort));
    const sides = [
      { name: 'open (no billing)', srv: open, query: '' },
      { name: 'gated (cached verdict)', srv: gated, query: `?token=${TOKEN}` },
    ];
    // wrk runs synchronously, so a kept-alive socket may have been closed by the server
    // meanwhile without this process noticing: a failed fetch is tried once more.
    const get = (url: string) => fetch(url).catch(() => fetch(url));
    const newest = async (s: (typeof sides)[number]) => {
      const r = await get(`${s.srv.url}/big/index.m3u8${s.query}`).catch(() => undefined);
      if (!r?.ok) return undefined;
      const uris = (await r.text()).match(/^seg-[0-9a-f]+\.ts/gm) ?? [];
      return uris.length >= 2 ? uris[uris.length - 1] : undefined;
    };
    for (const s of sides) await waitFor(`segments of ${s.name}`, () => newest(s), READY_MS);
    const asked0 = billing.events('auth').length;

    const runs = sides.map(() => ({
      seg: [] as number[],
      segCpu: [] as number[],
      pl: [] as number[],
      plCpu: [] as number[],
      bytes: [] as number[],
    }));
    const ratios = { seg: [] as number[], pl: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const got = [] as { segRate: number; plRate: number }[];
      for (let j = 0; j < sides.length; j++) {
        const k = (round + j) % sides.length;
        const s = sides[k]!;
        const seg = await newest(s);
        if (!seg) throw new Error(`${s.name}: no live segment`);
        const segUrl = `${s.srv.url}/big/${seg}${s.query}`;
        const bytes = (await (await get(segUrl)).arrayBuffer()).byteLength;
        let cpu0 = procCpu(s.srv.proc.pid!);
        const fs = wrk(segUrl, { seconds: WRK_S, connections: SEGMENT_CONNECTIONS });
        const segCpu = ((procCpu(s.srv.proc.pid!) - cpu0) * 1e6) / (fs.rps * WRK_S);
        cpu0 = procCpu(s.srv.proc.pid!);
        const fp = wrk(`${s.srv.url}/big/index.m3u8${s.query}`, {
          seconds: WRK_S,
          connections: PLAYLIST_CONNECTIONS,
        });
        const plCpu = ((procCpu(s.srv.proc.pid!) - cpu0) * 1e6) / (fp.rps * WRK_S);
        const r = runs[k]!;
        r.seg.push(fs.rps);
        r.segCpu.push(segCpu);
        r.pl.push(fp.rps);
        r.plCpu.push(plCpu);
        r.bytes.push(bytes);
        got[k] = { segRate: fs.rps * bytes, plRate: fp.rps };
      }
      ratios.seg.push(got[1]!.segRate / got[0]!.segRate);
      ratios.pl.push(got[1]!.plRate / got[0]!.plRate);
    }
    const asked = billing.events('auth').length - asked0;

    console.log(
      `wrk -t1, ${WRK_S} s per run, ${ROUNDS} rounds; segment ${SEGMENT_CONNECTIONS} connections, playlist ${PLAYLIST_CONNECTIONS}; load ${readFileSync('/proc/loadavg', 'utf8').trim()}`,
    );
    console.log(
      '| side | segment bytes | segment req/s | CPU µs/segment | playlist req/s | CPU µs/playlist |',
    );
    console.log('|---|---|---|---|---|---|');
    sides.forEach((s, k) => {
      const r = runs[k]!;
      console.log(
        `| ${s.name} | ${median(r.bytes)} | ${median(r.seg).toFixed(0)} | ${median(r.segCpu).toFixed(0)} | ${median(r.pl).toFixed(0)} | ${median(r.plCpu).toFixed(1)} |`,
      );
    });
    const seg = median(ratios.seg);
    const pl = median(ratios.pl);
    const v = (r: number, goal: number) =>
      `${r.toFixed(2)}× (goal ≥ ${goal}×: ${r >= goal ? 'met' : 'missed'})`;
    console.log(
      `per round, gated ÷ open: segment bytes/s ${ratios.seg.map((x) => x.toFixed(2)).join(' ')}; playlist req/s ${ratios.pl.map((x) => x.toFixed(2)).join(' ')}`,
    );
    console.log(`segment (per byte): ${v(seg, GOAL_SEGMENT)}`);
    console.log(`playlist: ${v(pl, GOAL_PLAYLIST)}`);
    console.log(`billing asked ${asked} times during the runs (cached verdict)`);
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    for (const fn of cleanups.reverse()) await fn();
  }
}

await main();
