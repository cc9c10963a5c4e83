// Bench: cold /xmltv build (plain + gzip bodies) of the 1,000 channels × 7 days × 30 programmes
// database, each build in a fresh process so its RSS is its own (RSS before the build, peak,
// and the difference = the build alone): three builds at the shipped gzip level 6, one at level 1.
// Peers in the same run: the sqlite3 CLI reading the same joined rows (the database floor)
// and gzip(1) compressing the same plain body (the compression floor).
// Equal work: the build reads those rows, renders the XML and compresses it; the peers read the
// rows (output to /dev/null, no XML) and compress the finished body, so their sum is a floor
// that leaves the rendering out. gzip runs at the level compared (-6 for the shipped build, -1
// beside level 1); sqlite3 runs the query as given, no settings changed.
// Usage: npx tsx bench/epg-xmltv.ts [channels] [days] [perDay]
// Figures: printed; copy them to bench/RESULTS.md.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  benchHost,
  cpuModel,
  importGuide,
  mb,
  runChild,
  SYNTH_START,
  writeSynthGuide,
} from './epg-synth.ts';
import { benchHeader } from './lib/header.ts';

const SCRIPT = new URL(import.meta.url).pathname;
/** The clock of the run: one hour into the guide (events before it are left out). */
const NOW = SYNTH_START + 3600;

interface BuildFigures {
  ms: number;
  cpuMs: number;
  rssBefore: number;
  peak: number;
  plain: number;
  gzip: number;
}

async function childBuild(dataDir: string, level: number, plainOut: string): Promise<void> {
  const { ManualClock } = await import('../src/util/clock.ts');
  const { silentLogger } = await import('../src/log.ts');
  const { acquireEpgRuntime } = await import('../src/epg/runtime.ts');
  const { buildXmltvBodies } = await import('../src/epg/xmltv-export.ts');
  const rt = acquireEpgRuntime(benchHost(dataDir, new ManualClock(NOW * 1000), silentLogger));
  rt.openSource(1);
  const channels = rt.allChannels();
  const rssBefore = process.memoryUsage().rss;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const bodies = await buildXmltvBodies(
    rt,
    channels,
    { sourceInfoName: 'b', sourceInfoUrl: '' },
    level,
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const peak = process.resourceUsage().maxRSS * 1024;
  if (plainOut) writeFileSync(plainOut, bodies.plain);
  const out: BuildFigures = {
    ms,
    cpuMs: (cpu.user + cpu.system) / 1000,
    rssBefore,
    peak,
    plain: bodies.plainLength,
    gzip: bodies.gzip.length,
  };
  console.log(JSON.stringify(out));
}

/** Wall and CPU time (user + system of the child, from the shell's `times`) of a command,
 *  its output discarded. */
function timed(cmd: string, args: string[]): { ms: number; cpuMs: number } {
  const t0 = performance.now();
  const r = spawnSync('sh', ['-c', '"$0" "$@" > /dev/null && times', cmd, ...args], {
    encoding: 'utf8',
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  // `times` prints the shell's then the children's "XmY.YYYs XmZ.ZZZs".
  const line = r.stdout.trim().split('\n').pop() ?? '';
  const secs = [...line.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
  return { ms, cpuMs: ((secs[0] ?? 0) + (secs[1] ?? 0)) * 1000 };
}

async function main(): Promise<void> {
  benchHeader('epg-xmltv');
  const [channels = 1000, days = 7, perDay = 30] = process.argv.slice(2).map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-epg-xmltv-'));
  try {
    const file = join(dir, 'guide.xml');
    const programmes = await writeSynthGuide(file, { channels, days, perDay });
    runChild(SCRIPT, ['import', file, dir]);
    const plainFile = join(dir, 'plain.xml');
    const runs = [1, 1, 1].map((_, i) =>
      runChild<BuildFigures>(SCRIPT, ['build', dir, '6', i === 0 ? plainFile : '']),
    );
    const level1 = runChild<BuildFigures>(SCRIPT, ['build', dir, '1', '']);
    const db = join(dir, 'epg', 'src-1.sqlite');
    const sql = `SELECT e.id, e.start_time, e.stop_time, t.lang_id, t.title, t.desc, r.system, r.value
      FROM channel c JOIN event e ON e.channel_id = c.channel_id
      LEFT JOIN event_text t ON t.event_id = e.id LEFT JOIN event_rating r ON r.event_id = e.id
      WHERE e.stop_time >= ${NOW} ORDER BY c.channel_id, e.start_time`;
    const sqlite = timed('sqlite3', [db, sql]);
    const gzip6 = timed('gzip', ['-6', '-c', plainFile]);
    const gzip1 = timed('gzip', ['-1', '-c', plainFile]);
    const best = [...runs].sort((a, b) => a.ms - b.ms)[0]!;
    const median = [...runs].sort((a, b) => a.ms - b.ms)[1]!;
    const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    console.log(
      `| date | ${new Date().toISOString().slice(0, 10)} | machine | 2 cores (${cpuModel()}) |`,
    );
    console.log(
      `guide: ${channels} × ${days} days × ${perDay} = ${programmes} programmes, ${mb(statSync(file).size)} MB; ` +
        `body plain ${mb(best.plain)} MB, gzip level 6 ${mb(best.gzip)} MB, level 1 ${mb(level1.gzip)} MB`,
    );
    console.log('| run | wall | CPU | RSS before | peak RSS | build alone (peak − before) |');
    console.log('|---|---|---|---|---|---|');
    runs.forEach((r, i) => {
      console.log(
        `| sluice cold build, gzip 6 (shipped), run ${i + 1} | ${s(r.ms)} | ${s(r.cpuMs)} | ${mb(r.rssBefore)} MB | ${mb(r.peak)} MB | ${mb(r.peak - r.rssBefore)} MB |`,
      );
    });
    console.log(
      `| sluice cold build, gzip 1 | ${s(level1.ms)} | ${s(level1.cpuMs)} | ${mb(level1.rssBefore)} MB | ${mb(level1.peak)} MB | ${mb(level1.peak - level1.rssBefore)} MB |`,
    );
    console.log(`| peer: sqlite3 CLI, same rows | ${s(sqlite.ms)} | ${s(sqlite.cpuMs)} | | | |`);
    console.log(`| peer: gzip -6 of the plain body | ${s(gzip6.ms)} | ${s(gzip6.cpuMs)} | | | |`);
    console.log(`| peer: gzip -1 of the plain body | ${s(gzip1.ms)} | ${s(gzip1.cpuMs)} | | | |`);
    const peerCpu = sqlite.cpuMs + gzip6.cpuMs;
    console.log(
      `| ratio median build / (sqlite3 + gzip -6) | ${(median.ms / (sqlite.ms + gzip6.ms)).toFixed(2)}× | ${(median.cpuMs / peerCpu).toFixed(2)}× | | | |`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
if (mode === 'import') {
  await importGuide(process.argv[3]!, process.argv[4]!, NOW);
  console.log('{}');
} else if (mode === 'build') {
  await childBuild(process.argv[3]!, Number(process.argv[4]), process.argv[5] ?? '');
} else await main();
