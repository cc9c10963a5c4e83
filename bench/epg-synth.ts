// Not a bench: the helpers epg-big.ts, epg-xmltv.ts and epg-serve.ts share. A generator of a
// synthetic XMLTV guide (channels × days × programmes per day, optional description padding),
// written to a file in chunks (never one string); a child-process runner that reports a JSON line
// (clean RSS per measurement); the guide import into a source database. epg-import.ts keeps its
// own copy of the same generator (same elements, same bytes without padding).
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { Services } from '../src/util/services.ts';

/** 2026-03-10 00:00 UTC: the first day of the synthetic guides. */
export const SYNTH_START = Date.UTC(2026, 2, 10) / 1000;

export interface SynthShape {
  channels: number;
  days: number;
  perDay: number;
  /** Extra description characters per programme (the 500 MB run pads with these). */
  descPad?: number;
  /** Unix seconds of the first programme (default SYNTH_START). */
  start?: number;
}

function stamp(sec: number): string {
  const d = new Date(sec * 1000);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}00 +0000`;
}

/** Write the guide: `channels` channels, each with days × perDay programmes (title, desc,
 *  rating). Returns the number of programmes written. */
export async function writeSynthGuide(path: string, shape: SynthShape): Promise<number> {
  const { channels, days, perDay } = shape;
  const pad = shape.descPad ? ` ${'x'.repeat(shape.descPad)}` : '';
  const out = createWriteStream(path);
  const w = async (s: string) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  await w('<?xml version="1.0" encoding="UTF-8"?>\n<tv>\n');
  for (let c = 0; c < channels; c++)
    await w(
      `<channel id="ch${c}.example"><display-name lang="en">Channel ${c}</display-name></channel>\n`,
    );
  const len = Math.floor(86400 / perDay);
  let n = 0;
  for (let c = 0; c < channels; c++) {
    let buf = '';
    for (let i = 0; i < days * perDay; i++) {
      const s = (shape.start ?? SYNTH_START) + i * len;
      buf += `<programme start="${stamp(s)}" stop="${stamp(s + len)}" channel="ch${c}.example"><title lang="en">Programme ${i} on ${c}</title><desc lang="en">A description of programme ${i}, long enough to look like a real synopsis of a show.${pad}</desc><rating system="X"><value>12</value></rating></programme>\n`;
      n++;
      if (buf.length > 1 << 20) {
        await w(buf);
        buf = '';
      }
    }
    await w(buf);
  }
  await w('</tv>\n');
  out.end();
  await once(out, 'finish');
  return n;
}

/** Run this script again as a child with `args`; its last stdout line is JSON. */
export function runChild<T>(script: string, args: string[]): T {
  const r = spawnSync(process.execPath, ['--import', 'tsx', script, ...args], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`${script} ${args.join(' ')} failed:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as T;
}

/** The CPU kind for the benches' result tables (one definition: ./lib/header.ts). */
export { cpuModel } from './lib/header.ts';

export const mb = (b: number): string => (b / 1048576).toFixed(0);

/** Import a guide file into `<dataDir>/epg/src-1.sqlite` (call in a child process: the
 *  import's memory must not count in later measurements). `nowSec` is the clock of the run. */
export async function importGuide(file: string, dataDir: string, nowSec: number): Promise<void> {
  const { ManualClock } = await import('../src/util/clock.ts');
  const { silentLogger } = await import('../src/log.ts');
  const { acquireEpgRuntime, releaseEpgRuntime } = await import('../src/epg/runtime.ts');
  const { XmltvSource } = await import('../src/epg/xmltv-source.ts');
  const { sourceRecord } = await import('../test/helpers/epg-host.ts');
  const host = benchHost(dataDir, new ManualClock(nowSec * 1000), silentLogger);
  const rt = acquireEpgRuntime(host);
  const src = new XmltvSource(
    rt,
    sourceRecord({ id: 1, name: 'bench', source: file, enable: true }),
    silentLogger,
  );
  await src.idle();
  const st = src.status();
  await src.close();
  releaseEpgRuntime(host, rt);
  if (st.state !== 'ready') throw new Error(`import failed: ${st.message ?? st.lastError}`);
}

/** A Host for the EPG runtime in a bench process. */
export function benchHost<C, L>(dataDir: string, clock: C, log: L) {
  return { log, clock, dataDir, services: new Services(), lookup: () => undefined };
}
