// Stream thumbnails for the mosaic (docs/mosaic.md): streams' key frames
// (HttpTsFanout.keyFrame()) decoded to JPEGs by one ffmpeg child per batch of streams, the
// "no signal" card, and the grid of all thumbnails tiled by one more ffmpeg child. Children are
// spawned with argv only (never a shell), data on descriptors 3 and up, through a small pool
// that bounds how many run at once; each reports its CPU time (`-benchmark`).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { ffmpegPath, ffmpegSpawnError } from '../util/ffmpeg.ts';

/** The card's colour (RGB): a dark slate blue no test pattern or picture averages to. */
export const NO_SIGNAL_RGB: readonly [number, number, number] = [0x20, 0x28, 0x50];
const NO_SIGNAL_HEX = '0x202850';
const CARD_FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';
/** A child that takes longer than this is killed (a broken input must not hold a slot). */
const CHILD_TIMEOUT_MS = 10_000;
/** stderr kept of a child, for the failure message and the CPU figures. */
const MAX_STDERR = 8 * 1024;

/** Size of a thumbnail: `width` wide, 16:9, both even (4:2:0 JPEG). */
export function thumbnailSize(width: number): { width: number; height: number } {
  const w = Math.max(2, Math.round(width / 2) * 2);
  return { width: w, height: Math.max(2, Math.round((w * 9) / 16 / 2) * 2) };
}

export interface GridLayout {
  columns: number;
  rows: number;
  /** Top-left pixel of each cell, in order (row by row). */
  cells: { x: number; y: number }[];
  width: number;
  height: number;
}

/** Cells of `n` thumbnails of `w`×`h`, `columns` per row (fewer when there are fewer). */
export function gridLayout(n: number, columns: number, w: number, h: number): GridLayout {
  const cols = Math.max(1, Math.min(columns, n));
  const rows = Math.max(1, Math.ceil(n / cols));
  const cells = Array.from({ length: n }, (_, i) => ({
    x: (i % cols) * w,
    y: Math.floor(i / cols) * h,
  }));
  return { columns: cols, rows, cells, width: cols * w, height: rows * h };
}

const COMMON = ['-hide_banner', '-nostats', '-loglevel', 'info', '-benchmark', '-threads', '1'];
const JPEG = ['-q:v', '5', '-f', 'mjpeg'];
/** The first file descriptor of a child's inputs; its outputs follow them. */
const FIRST_FD = 3;

/** Scale into w×h keeping the aspect ratio, padded with black. */
function fit(w: number, h: number): string {
  return `scale=${w}:${h}:force_original_aspect_ratio=decrease,pad=${w}:${h}:(ow-iw)/2:(oh-ih)/2`;
}

/**
 * Decode `k` streams' key frames in one child (its start-up, tens of ms of CPU for the
 * libraries, is most of a single thumbnail's cost): input i (PAT, PMT, one key frame) on
 * descriptor 3+i, the first video frame of each to a w×h JPEG on descriptor 3+k+i.
 */
export function thumbnailArgs(k: number, w: number, h: number): string[] {
  const args = [...COMMON];
  for (let i = 0; i < k; i++) args.push('-f', 'mpegts', '-i', `pipe:${FIRST_FD + i}`);
  for (let i = 0; i < k; i++) {
    args.push('-map', `${i}:v:0`, '-frames:v', '1', '-vf', fit(w, h), ...JPEG);
    args.push(`pipe:${FIRST_FD + k + i}`);
  }
  return args;
}

/** The "no signal" card: the card colour, with the words when the font is there (no input;
 *  the JPEG on descriptor 3). */
export function noSignalArgs(w: number, h: number, font = CARD_FONT): string[] {
  const size = Math.max(8, Math.round(h / 8));
  const text = existsSync(font)
    ? `drawtext=fontfile=${font}:text=NO SIGNAL:fontcolor=0xb0b0b0:fontsize=${size}:x=(w-tw)/2:y=(h-th)/2`
    : 'null';
  const color = `color=c=${NO_SIGNAL_HEX}:s=${w}x${h}`;
  return [
    ...COMMON,
    '-f',
    'lavfi',
    '-i',
    color,
    '-frames:v',
    '1',
    '-vf',
    text,
    ...JPEG,
    `pipe:${FIRST_FD}`,
  ];
}

/** The grid: every thumbnail (same size, JPEGs one after the other on descriptor 3) tiled;
 *  the JPEG on descriptor 4. */
export function gridArgs(layout: GridLayout): string[] {
  const tile = `tile=${layout.columns}x${layout.rows}`;
  const input = ['-f', 'image2pipe', '-c:v', 'mjpeg', '-i', `pipe:${FIRST_FD}`];
  return [...COMMON, ...input, '-frames:v', '1', '-vf', tile, ...JPEG, `pipe:${FIRST_FD + 1}`];
}

export interface ChildResult {
  /** What the child wrote on each output descriptor, in order (empty: nothing made). */
  outs: Buffer[];
  /** CPU seconds of the child's work (user + system) from its `-benchmark` line, 0 if absent:
   *  the decode, not the process start-up (bench/mosaic.ts measures both). */
  cpuSec: number;
}

/**
 * Run ffmpeg with `args` (argv, no shell): `inputs[i]` written to descriptor 3+i, `outputs`
 * descriptors read after them. Resolves when it exits 0 (some outputs may be empty), rejects
 * otherwise, when it outlives CHILD_TIMEOUT_MS or when `signal` aborts (the child is killed).
 */
export function runFfmpeg(
  args: string[],
  inputs: Buffer[],
  outputs: number,
  opts: { bin?: string; signal?: AbortSignal } = {},
): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const fds = inputs.length + outputs;
    const bin = opts.bin ?? ffmpegPath(); // server.ffmpeg-path, read at each start
    const child = spawn(bin, args, {
      stdio: ['ignore', 'ignore', 'pipe', ...Array(fds).fill('pipe')],
      killSignal: 'SIGKILL',
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const outs: Buffer[][] = Array.from({ length: outputs }, () => []);
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
    child.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-MAX_STDERR);
    });
    inputs.forEach((buf, i) => {
      const w = child.stdio[FIRST_FD + i] as Writable;
      w.on('error', () => {}); // the child may exit before reading everything
      w.end(buf);
    });
    outs.forEach((parts, j) => {
      const r = child.stdio[FIRST_FD + inputs.length + j] as Readable;
      r.on('data', (d: Buffer) => parts.push(d));
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      // Aborted on purpose: the abort error as it is; anything else cannot start ffmpeg.
      reject(e.name === 'AbortError' ? e : new Error(ffmpegSpawnError(e, bin)));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const m = /utime=([\d.]+)s stime=([\d.]+)s/.exec(err);
      const cpuSec = m ? Number(m[1]) + Number(m[2]) : 0;
      if (code === 0) return resolve({ outs: outs.map((p) => Buffer.concat(p)), cpuSec });
      const last =
        err
          .trim()
          .split('\n')
          .filter((l) => !l.startsWith('bench:'))
          .pop() ?? '';
      reject(Object.assign(new Error(`ffmpeg ${signal ?? code}: ${last}`), { cpuSec }));
    });
  });
}

/** At most `size` jobs at once; the rest wait in order. */
export class JobPool {
  private running = 0;
  private waiting: (() => void)[] = [];

  constructor(readonly size: number) {}

  get pending(): number {
    return this.running + this.waiting.length;
  }

  async run<T>(job: () => Promise<T>): Promise<T> {
    // A finishing job hands its slot straight to the next waiting one.
    if (this.running < this.size) this.running++;
    else await new Promise<void>((r) => this.waiting.push(r));
    try {
      return await job();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
