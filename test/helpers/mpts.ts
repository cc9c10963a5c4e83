// A multi-programme transport stream made by ffmpeg (`-program …`, one lavfi picture and tone
// per programme, each with its own codecs; ffmpeg writes the SDT from the programme titles) with
// crafted EIT sections woven in after every PAT; the PSI of such a file read back (PAT, PMTs);
// and the readers the demuxer tests use on a stream's HTTP-TS output (ffprobe's programmes,
// a byte capture).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { PKT, psiPackets } from './ts-craft.ts';

export interface MptsProgramme {
  pnr: number;
  /** The service name ffmpeg puts in the SDT. */
  title: string;
  video: 'libx264' | 'libx265' | 'mpeg2video';
  audio: 'aac' | 'mp2' | 'ac3';
}

const pidOf = (ts: Buffer, o: number) => ((ts[o + 1]! & 0x1f) << 8) | ts[o + 2]!;
const pusi = (ts: Buffer, o: number) => (ts[o + 1]! & 0x40) !== 0;

/** Write `file`: the programmes muxed by ffmpeg (`seconds` long, 160x120 at 25 fps, GOP 1 s),
 *  then `eit` (EIT sections, PID 0x12) woven in after every PAT packet that starts a section. */
export function makeMpts(
  file: string,
  programmes: MptsProgramme[],
  seconds: number,
  eit: Buffer[],
): void {
  const inputs = programmes.flatMap((_, i) => [
    ...['-f', 'lavfi', '-i', `testsrc2=size=160x120:rate=25:duration=${seconds}`],
    ...[
      '-f',
      'lavfi',
      '-i',
      `sine=frequency=${400 + i * 100}:sample_rate=48000:duration=${seconds}`,
    ],
  ]);
  const codecs = programmes.flatMap((p, i) => [
    ...['-map', String(2 * i), '-map', String(2 * i + 1)],
    ...[`-c:v:${i}`, p.video, `-c:a:${i}`, p.audio],
    ...['-program', `program_num=${p.pnr}:title=${p.title}:st=${2 * i}:st=${2 * i + 1}`],
  ]);
  const raw = `${file}.raw`;
  const r = spawnSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...inputs,
    ...codecs,
    ...['-preset', 'ultrafast', '-g', '25', '-x265-params', 'log-level=error'],
    ...['-metadata', 'service_provider=Sluice', '-f', 'mpegts', raw],
  ]);
  if (r.status !== 0) throw new Error(`ffmpeg: ${r.stderr}`);
  const ts = readFileSync(raw);
  const cc = { n: 0 };
  const out: Buffer[] = [];
  for (let o = 0; o + PKT <= ts.length; o += PKT) {
    out.push(ts.subarray(o, o + PKT));
    if (pidOf(ts, o) === 0 && pusi(ts, o)) out.push(...psiPackets(0x12, eit, cc));
  }
  writeFileSync(file, Buffer.concat(out));
}

export interface PmtInfo {
  pnr: number;
  pmtPid: number;
  pcrPid: number;
  /** The PMT section as found (one packet's worth, pointer field 0). */
  section: Buffer;
}

/** The PAT's programmes and their first PMT sections in a TS buffer (sections that fit one
 *  packet, as ffmpeg writes them). */
export function readPmts(ts: Buffer): PmtInfo[] {
  const first = (pid: number): Buffer | undefined => {
    for (let o = 0; o + PKT <= ts.length; o += PKT) {
      if (pidOf(ts, o) !== pid || !pusi(ts, o)) continue;
      const at = o + 4 + ((ts[o + 3]! & 0x20) !== 0 ? 1 + ts[o + 4]! : 0);
      const s = at + 1 + ts[at]!;
      return ts.subarray(s, s + 3 + (((ts[s + 1]! & 0x0f) << 8) | ts[s + 2]!));
    }
    return undefined;
  };
  const pat = first(0);
  if (!pat) throw new Error('no PAT');
  const out: PmtInfo[] = [];
  for (let i = 8; i + 4 <= pat.length - 4; i += 4) {
    const pnr = pat.readUInt16BE(i);
    if (pnr === 0) continue;
    const pmtPid = pat.readUInt16BE(i + 2) & 0x1fff;
    const section = first(pmtPid);
    if (!section) throw new Error(`no PMT for programme ${pnr}`);
    out.push({ pnr, pmtPid, pcrPid: section.readUInt16BE(8) & 0x1fff, section });
  }
  return out;
}

export interface ProbedProgramme {
  program_num: number;
  pmt_pid: number;
  tags?: { service_name?: string; service_provider?: string };
  streams: { codec_name: string; id: string }[];
}

/** ffprobe's `-show_programs` of a URL (3 s analysis, killed after 20 s). */
export async function probePrograms(url: string): Promise<ProbedProgramme[]> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      'ffprobe',
      [
        ...['-v', 'error', '-show_programs', '-of', 'json'],
        ...['-rw_timeout', '8000000', '-analyzeduration', '3000000', url],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
    p.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`ffprobe ${url}: ${code} ${err}`));
      else resolve((JSON.parse(out) as { programs: ProbedProgramme[] }).programs);
    });
  });
}

/** About `bytes` of an HTTP response body (the request is dropped then). */
export async function captureHttp(url: string, bytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let n = 0;
    const req = http.get(url, (res) =>
      res.on('data', (d: Buffer) => {
        parts.push(d);
        n += d.length;
        if (n >= bytes) {
          req.destroy();
          resolve(Buffer.concat(parts));
        }
      }),
    );
    req.on('error', reject);
  });
}

/**
 * `ms` of an HTTP response body, cut to whole TS packets and written to `file` (for ffprobe).
 * A fixed wait by nature: a real duration of live output is what is captured.
 */
export async function captureForMs(url: string, ms: number, file: string): Promise<string> {
  const parts: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    const req = http.get(url, (res) => {
      res.on('data', (d: Buffer) => parts.push(d));
    });
    req.on('error', reject);
    // fixed wait: the capture's length is the real duration of output asked for
    setTimeout(() => {
      req.destroy();
      resolve();
    }, ms);
  });
  const all = Buffer.concat(parts);
  writeFileSync(file, all.subarray(0, all.length - (all.length % PKT)));
  return file;
}
