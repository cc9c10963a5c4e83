// `transcoder` input: the output of another stream (`decoder-id`) re-encoded by an ffmpeg child
// (argv only, never a shell). The source stream's bus is written to the encoder's stdin once its
// PAT and PMT are known (the argv depends on them: ./args.ts); the encoder's stdout is this
// input's data. The encoder restarts with backoff when it exits; its stderr goes to the log at a
// bounded rate; its progress (fd 3, `-progress`) is in the status and /metrics.
// docs/transcoder.md.
import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { int } from '../../config/spec-values.ts';
import type { StreamBus } from '../../engine/bus.ts';
import type { BusRef, EncoderMetrics, InputContext, InputTransport } from '../../engine/input.ts';
import type { Timer } from '../../util/clock.ts';
import { ffmpegPath, ffmpegSpawnError } from '../../util/ffmpeg.ts';
import { Backoff } from '../common.ts';
import { type SourceProgramme, transcoderArgs } from './args.ts';
import { ProgrammeProbe } from './probe.ts';
import { retimedJumps, subscribeRetimed } from './retime.ts';

const RELOOK_MS = 1000;
const KILL_GRACE_MS = 2000;
/** A run that lasted this long resets the backoff. */
const STABLE_RUN_MS = 10_000;
/** Bytes queued on the encoder's stdin past which source packets are dropped (it is behind). */
const STDIN_QUEUE_MAX = 4 * 1024 * 1024;
/** stderr lines logged per window; the rest are counted and summed up once per window. */
export const STDERR_LINES_PER_WINDOW = 20;
export const STDERR_WINDOW_MS = 10_000;
const STDERR_KEEP = 10;
/** A source that sent nothing for this long is not running (no signal, its input dead). */
const SOURCE_SILENT_MS = 3000;

/** The encoder's last progress report (ffmpeg `-progress`). */
export interface EncoderProgress {
  frames: number;
  fps: number;
  /** Output bit rate, bit/s. */
  bitrate: number;
  /** Encoding speed against real time (1 = real time). */
  speed: number;
  droppedFrames: number;
  duplicatedFrames: number;
}

/** Parse one `-progress` block's `key=value` lines into the figures kept. */
export function parseProgress(lines: Record<string, string>): EncoderProgress {
  const n = (s: string | undefined) => {
    const v = Number.parseFloat(s ?? '');
    return Number.isFinite(v) ? v : 0;
  };
  return {
    frames: n(lines['frame']),
    fps: n(lines['fps']),
    bitrate: Math.round(n(lines['bitrate']) * 1000), // "1234.5kbits/s"
    speed: n(lines['speed']), // "1.01x"
    droppedFrames: n(lines['drop_frames']),
    duplicatedFrames: n(lines['dup_frames']),
  };
}

export class TranscoderInput implements InputTransport {
  private readonly sourceId: number;
  private readonly ref: BusRef;
  private bus: StreamBus | undefined;
  private unsubscribe: (() => void) | null = null;
  private relook: Timer | null = null;
  private probe: ProgrammeProbe | null = null;
  private programme: SourceProgramme | null = null;
  private child: ChildProcess | null = null;
  private readonly backoff: Backoff;
  private closed = false;
  private sourceEnded = false;
  /** Monotonic time of the source's last batch (or of subscribing to its bus). */
  private sourceAt = 0;
  private starts = 0;
  private startedAt = 0;
  private delivering = false;
  private lastExit = '';
  private bytesIn = 0;
  private bytesOut = 0;
  private droppedBytes = 0;
  private progress: EncoderProgress | null = null;
  private stderrTail: string[] = [];
  private readonly stderrLimit = new LineRateLimit(STDERR_LINES_PER_WINDOW, STDERR_WINDOW_MS);

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.sourceId = int(cfg, 'decoder-id', 0);
    this.ref = { kind: 'stream', key: String(this.sourceId) };
    this.backoff = new Backoff(ctx.clock);
  }

  start(): void {
    this.attach();
    this.relook = this.ctx.clock.setInterval(() => this.attach(), RELOOK_MS);
  }

  /** Subscribe to the source's current bus (again, when the source was recreated). */
  private attach(): void {
    if (this.closed) return;
    const bus = this.ctx.bus(this.ref);
    if (bus === this.bus) return;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.bus = bus;
    if (!bus) return;
    this.probe = new ProgrammeProbe((p) => this.programmeFound(p));
    this.sourceAt = this.ctx.clock.monotonic();
    this.unsubscribe = subscribeRetimed(bus, {
      packets: (b) => this.sourcePackets(b),
      end: () => {
        this.sourceEnded = true;
      },
    });
  }

  /** A retimed batch (shared with the source's other transcoders, not to be changed); returns
   *  whether it was kept: queued on the encoder's stdin rather than taken by the pipe at once
   *  (a write that completes at once leaves nothing queued: Writable counts it off in the call). */
  private sourcePackets(b: Buffer): boolean {
    this.sourceEnded = false;
    this.sourceAt = this.ctx.clock.monotonic();
    this.probe?.packets(b);
    const stdin = this.child?.stdin;
    if (!stdin?.writable) return false;
    if (stdin.writableLength > STDIN_QUEUE_MAX) {
      this.droppedBytes += b.length;
      return false;
    }
    this.bytesIn += b.length;
    stdin.write(b);
    return stdin.writableLength > 0;
  }

  /** A programme description, first or changed: (re)start the encoder with its argv. */
  private programmeFound(p: SourceProgramme): void {
    const first = this.programme === null;
    // A source recreated (a new bus, a new probe) describes the same programme again.
    if (!first && JSON.stringify(p) === JSON.stringify(this.programme)) return;
    this.programme = p;
    if (first) {
      this.spawnEncoder();
      return;
    }
    this.ctx.log.info({ programme: p }, 'transcoder source programme changed: encoder restarts');
    this.child?.kill('SIGTERM'); // its 'close' restarts it with the new argv
  }

  private spawnEncoder(): void {
    if (this.closed || !this.programme || this.child) return;
    const args = transcoderArgs(this.cfg, this.programme, this.ctx.streamName);
    const bin = ffmpegPath(); // server.ffmpeg-path, read at each start
    const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
    this.child = child;
    this.starts++;
    this.startedAt = this.ctx.clock.monotonic();
    const restart = this.starts > 1;
    let spawnError = '';
    child.stdin!.on('error', () => {}); // EPIPE when the encoder dies: its 'close' says why
    child.stdout!.on('data', (d: Buffer) => {
      if (!this.delivering && restart) this.ctx.onDiscontinuity?.('encoder restarted');
      this.delivering = true;
      this.bytesOut += d.length;
      this.ctx.onData(d, true);
    });
    lines(child.stderr!, (l) => this.stderrLine(l));
    let block: Record<string, string> = {};
    lines(child.stdio[3] as Readable, (l) => {
      const eq = l.indexOf('=');
      if (eq < 0) return;
      const k = l.slice(0, eq).trim();
      block[k] = l.slice(eq + 1).trim();
      if (k === 'progress') {
        this.progress = parseProgress(block);
        block = {};
      }
    });
    child.on('error', (err) => {
      spawnError = ffmpegSpawnError(err, bin);
    });
    child.on('close', (code, signal) => {
      if (this.child !== child) return;
      this.child = null;
      this.delivering = false;
      this.lastExit = spawnError || (signal ? `killed by ${signal}` : `exited with code ${code}`);
      if (this.closed) return;
      if (this.ctx.clock.monotonic() - this.startedAt > STABLE_RUN_MS) this.backoff.reset();
      const d = this.backoff.schedule(() => this.spawnEncoder());
      this.ctx.log.warn({ exit: this.lastExit, retryMs: d }, 'transcoder encoder exited');
    });
  }

  /** Log a stderr line, at most STDERR_LINES_PER_WINDOW per window (the rest are counted). */
  private stderrLine(l: string): void {
    this.stderrTail.push(l);
    if (this.stderrTail.length > STDERR_KEEP) this.stderrTail.shift();
    const { log, suppressed } = this.stderrLimit.take(this.ctx.clock.monotonic());
    if (suppressed > 0) {
      this.ctx.log.warn({ suppressed }, 'transcoder encoder stderr lines not logged (rate limit)');
    }
    if (log) this.ctx.log.info({ stderr: l }, 'transcoder encoder stderr');
  }

  async close(): Promise<void> {
    this.closed = true;
    this.relook?.cancel();
    this.relook = null;
    this.backoff.cancel();
    this.unsubscribe?.();
    this.unsubscribe = null;
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      // A real timer: the child must be killed even when a test drives a manual clock.
      const killer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
      child.once('close', () => {
        clearTimeout(killer);
        resolve();
      });
      (child.stdin as Writable).destroy();
      child.kill('SIGTERM');
    });
  }

  /** The encoder's pid (tests kill it to see it restart). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Why nothing comes out ('' while the encoder delivers). A source that is gone, paused or
   *  silent (its input without signal) is named first: the encoder waits on it. */
  fault(): string {
    const silent = this.ctx.clock.monotonic() - this.sourceAt > SOURCE_SILENT_MS;
    if (!this.bus || this.sourceEnded || silent)
      return `source stream ${this.sourceId} is not running`;
    if (!this.programme) return `waiting for the PAT and PMT of source stream ${this.sourceId}`;
    return this.delivering ? '' : this.lastExit;
  }

  status(): Record<string, unknown> {
    return {
      decoderId: this.sourceId,
      pid: this.child?.pid ?? null,
      starts: this.starts,
      restarts: Math.max(0, this.starts - 1),
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      droppedBytes: this.droppedBytes,
      sourceJumps: this.bus ? retimedJumps(this.bus) : 0,
      ...(this.programme ? { source: this.programme } : {}),
      ...(this.progress ? { encoder: this.progress } : {}),
      ...(this.lastExit ? { lastExit: this.lastExit } : {}),
      ...(this.stderrTail.length ? { stderr: [...this.stderrTail] } : {}),
    };
  }

  encoder(): EncoderMetrics {
    const p = this.progress;
    return {
      fps: p?.fps ?? 0,
      speed: p?.speed ?? 0,
      bitrate: p?.bitrate ?? 0,
      frames: p?.frames ?? 0,
      droppedFrames: p?.droppedFrames ?? 0,
      duplicatedFrames: p?.duplicatedFrames ?? 0,
      restarts: Math.max(0, this.starts - 1),
    };
  }
}

/** At most `limit` lines per window of `windowMs`; the lines refused in a window are reported
 *  (`suppressed`) with the first line of a later window. */
export class LineRateLimit {
  private windowStart = -Infinity;
  private inWindow = 0;
  private refused = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  take(now: number): { log: boolean; suppressed: number } {
    let suppressed = 0;
    if (now - this.windowStart >= this.windowMs) {
      suppressed = this.refused;
      this.windowStart = now;
      this.inWindow = 0;
      this.refused = 0;
    }
    if (this.inWindow < this.limit) {
      this.inWindow++;
      return { log: true, suppressed };
    }
    this.refused++;
    return { log: false, suppressed };
  }
}

/** Call `fn` with each non-empty line of a text stream. */
function lines(stream: Readable, fn: (l: string) => void): void {
  let partial = '';
  stream.on('data', (d: Buffer) => {
    const list = (partial + d.toString('utf8')).split('\n');
    partial = list.pop() ?? '';
    for (const l of list) if (l.trim()) fn(l);
  });
  stream.on('error', () => {});
}
