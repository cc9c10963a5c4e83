// Bench: the EPG read paths on the 1,000 channels × 7 days × 30 programmes guide.
// 1. /data/epg/channel uncached, in-process: channelDay() for random channels, days and
//    languages with the cache flushed before every call (p50/p99), beside the bare SQLite day
//    query it runs (the floor), same process, same run.
// 2. The real server (`bin/sluice.js serve`, guide imported from a file source): cached
//    /data/epg/channel on the admin port and cached /xmltv.gz on the EPG port under wrk, each
//    beside nginx serving a file with the same bytes in the same run.
// Equal work: (1) the floor is the one SQLite query channelDay() runs, without the language pick
// and the JSON; (2) the same bytes to the same wrk (one thread, 16 keep-alive connections for
// the JSON, 4 with `Connection: close` for /xmltv.gz, as the EPG server closes every
// connection). nginx runs one worker with the access log off and otherwise its defaults
// (bench/http-peers.ts EPG_STYLE: sendfile off, no open-file cache, keepalive_requests 1000);
// it is not tuned further.
// Usage: npx tsx bench/epg-serve.ts [seconds-per-wrk-run]
// Figures: printed; copy them to bench/RESULTS.md.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, waitFor } from '../test/helpers/server.ts';
import {
  benchHost,
  cpuModel,
  importGuide,
  mb,
  runChild,
  SYNTH_START,
  writeSynthGuide,
} from './epg-synth.ts';
import { EPG_STYLE, startNginx, type WrkFigures, wrk } from './http-peers.ts';
import { benchHeader } from './lib/header.ts';

const SCRIPT = new URL(import.meta.url).pathname;
const SHAPE = { channels: 1000, days: 7, perDay: 30 };
const DAY = 86400;
const UNCACHED_CALLS = 20_000;
const WARMUP_CALLS = 500;
const IMPORT_TIMEOUT_MS = 120_000;

interface Percentiles {
  p50Us: number;
  p99Us: number;
  meanUs: number;
}

function percentiles(samples: number[]): Percentiles {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]! * 1000;
  return {
    p50Us: at(0.5),
    p99Us: at(0.99),
    meanUs: (s.reduce((a, b) => a + b, 0) / s.length) * 1000,
  };
}

/** Child: uncached channelDay() and the bare day query, interleaved call by call. */
async function childUncached(dataDir: string): Promise<void> {
  const { ManualClock } = await import('../src/util/clock.ts');
  const { silentLogger } = await import('../src/log.ts');
  const { acquireEpgRuntime } = await import('../src/epg/runtime.ts');
  const { channelDay } = await import('../src/epg/channel-endpoint.ts');
  const now = SYNTH_START + 3600;
  const rt = acquireEpgRuntime(benchHost(dataDir, new ManualClock(now * 1000), silentLogger));
  const store = rt.openSource(1);
  // A fixed pseudo-random sequence: every run asks the same questions.
  let x = 7;
  const next = (n: number) => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x % n;
  };
  const langs = [undefined, 'en', 'de', '1'];
  const ours: number[] = [];
  const floor: number[] = [];
  let events = 0;
  for (let i = 0; i < WARMUP_CALLS + UNCACHED_CALLS; i++) {
    const ch = `ch${next(SHAPE.channels)}.example`;
    const day = SYNTH_START + next(SHAPE.days) * DAY;
    const t = day + next(DAY);
    store.cache.clear();
    const a = performance.now();
    const body = channelDay(rt, { src: '1', ch, t: String(t), lang: langs[next(langs.length)] });
    const b = performance.now();
    store.db.dayRows(ch, day, day + DAY);
    const c = performance.now();
    if (i >= WARMUP_CALLS) {
      ours.push(b - a);
      floor.push(c - b);
      events += (JSON.parse(body) as { event: unknown[] }).event.length;
    }
  }
  console.log(
    JSON.stringify({
      ours: percentiles(ours),
      floor: percentiles(floor),
      eventsPerDay: events / UNCACHED_CALLS,
    }),
  );
}

async function serveRuns(dir: string, seconds: number): Promise<string[]> {
  const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
  const guide = join(dir, 'live.xml');
  await writeSynthGuide(guide, { ...SHAPE, start: today - DAY });
  const teardowns: (() => unknown)[] = [];
  const lines: string[] = [];
  try {
    const srv = await startServer(
      { teardown: (fn) => teardowns.push(fn) },
      {
        config: {
          epg: { source: [{ id: 1, name: 'bench', source: guide, enable: true }] },
        },
      },
    );
    const doc = JSON.parse(
      (await import('node:fs')).readFileSync(srv.configPath!, 'utf8'),
    ) as Record<string, { port: number }>;
    const epgBase = `http://127.0.0.1:${doc['epg-server']!.port}`;
    await waitFor(
      'the guide import',
      async () => {
        const r = await fetch(`${srv.url}/data/epg/source?s=1`);
        const st = (await r.json()) as { state: string; message?: string };
        if (st.state === 'error') throw new Error(st.message);
        return st.state === 'ready' ? st : undefined;
      },
      IMPORT_TIMEOUT_MS,
    );
    // First /xmltv after the import: the cold build as a client sees it.
    const t0 = performance.now();
    const gz = Buffer.from(await (await fetch(`${epgBase}/xmltv.gz`)).arrayBuffer());
    const coldMs = performance.now() - t0;
    const channelPath = `/data/epg/channel?src=1&ch=ch42.example&t=${today + DAY / 2}`;
    const json = Buffer.from(await (await fetch(`${srv.url}${channelPath}`)).arrayBuffer());
    const www = join(dir, 'www');
    mkdirSync(www);
    // nginx's worker runs as an unprivileged user: let it reach the files.
    chmodSync(dir, 0o755);
    writeFileSync(join(www, 'xmltv.gz'), gz);
    writeFileSync(join(www, 'channel.json'), json);
    const nginx = await startNginx(join(dir, 'nginx'), www, EPG_STYLE);
    teardowns.push(() => nginx.stop());
    const ng = `http://127.0.0.1:${nginx.port}`;
    const close = ['Connection: close'];
    const row = (name: string, f: WrkFigures) =>
      `| ${name} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(2)} ms | ${f.p99Ms.toFixed(2)} ms | ${f.mbPerSec.toFixed(1)} MB/s |`;
    const chOurs = wrk(`${srv.url}${channelPath}`, { seconds, connections: 16 });
    const chPeer = wrk(`${ng}/channel.json`, { seconds, connections: 16 });
    // The EPG server closes every connection (spec 2): nginx is asked to do the same.
    const xOurs = wrk(`${epgBase}/xmltv.gz`, { seconds, connections: 4, headers: close });
    const xPeer = wrk(`${ng}/xmltv.gz`, { seconds, connections: 4, headers: close });
    lines.push(
      `cold /xmltv.gz through the server after the import: ${(coldMs / 1000).toFixed(2)} s (${mb(gz.length)} MB gzip); ` +
        `JSON day body ${json.length} bytes`,
      '| wrk run | req/s | p50 | p99 | transfer |',
      '|---|---|---|---|---|',
      row('sluice /data/epg/channel (cached), 16 keep-alive connections', chOurs),
      row('nginx, same JSON bytes as a file', chPeer),
      `| ratio sluice / nginx | ${(chOurs.rps / chPeer.rps).toFixed(2)}× | | | |`,
      row('sluice EPG server /xmltv.gz (cached), 4 connections, Connection: close', xOurs),
      row('nginx, same gzip bytes as a file, Connection: close', xPeer),
      `| ratio sluice / nginx | ${(xOurs.rps / xPeer.rps).toFixed(2)}× | | | |`,
    );
  } finally {
    for (const fn of teardowns.reverse()) await fn();
  }
  return lines;
}

async function main(): Promise<void> {
  benchHeader('epg-serve');
  const seconds = Number(process.argv[2] ?? 5);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-epg-serve-'));
  try {
    const file = join(dir, 'guide.xml');
    await writeSynthGuide(file, SHAPE);
    runChild(SCRIPT, ['import', file, dir]);
    const u = runChild<{ ours: Percentiles; floor: Percentiles; eventsPerDay: number }>(SCRIPT, [
      'uncached',
      dir,
    ]);
    const us = (v: number) => `${v.toFixed(0)} µs`;
    console.log(
      `| date | ${new Date().toISOString().slice(0, 10)} | machine | 2 cores (${cpuModel()}) |`,
    );
    console.log(
      `uncached /data/epg/channel in-process: ${UNCACHED_CALLS} calls, random channel/day/lang, ` +
        `${u.eventsPerDay.toFixed(1)} events per day`,
    );
    console.log('| run | p50 | p99 | mean |');
    console.log('|---|---|---|---|');
    console.log(
      `| sluice channelDay(), cache flushed | ${us(u.ours.p50Us)} | ${us(u.ours.p99Us)} | ${us(u.ours.meanUs)} |`,
    );
    console.log(
      `| floor: the bare SQLite day query | ${us(u.floor.p50Us)} | ${us(u.floor.p99Us)} | ${us(u.floor.meanUs)} |`,
    );
    console.log(
      `| ratio | ${(u.ours.p50Us / u.floor.p50Us).toFixed(2)}× | ${(u.ours.p99Us / u.floor.p99Us).toFixed(2)}× | |`,
    );
    for (const l of await serveRuns(dir, seconds)) console.log(l);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
if (mode === 'import') {
  await importGuide(process.argv[3]!, process.argv[4]!, SYNTH_START + 3600);
  console.log('{}');
} else if (mode === 'uncached') {
  await childUncached(process.argv[3]!);
} else await main();
