// One external XMLTV source (EPG source record): scheduled and forced downloads from a file or
// HTTP(S) URL into a staging database that replaces the live one only when the whole import
// succeeded. Failures keep the previous data and show in the status.
import { createReadStream, createWriteStream, rmSync, type WriteStream } from 'node:fs';
import { rename } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { int, str } from '../config/spec-values.ts';
import type { Timer } from '../util/clock.ts';
import { EpgDatabase } from './database.ts';
import type { EpgRuntime } from './runtime.ts';
import { type ImportProgress, importXmltv } from './xmltv-import.ts';

const MS_PER_SECOND = 1000;
/** Abort a download when no byte arrived for this long. */
export const DOWNLOAD_IDLE_MS = 60_000;
/** Abort a download still running after its source's update interval, but never sooner than
 *  this (a large guide over a slow link): a server that trickles bytes slower than the idle
 *  limit would otherwise hold the import, and the previous data, forever. */
export const DOWNLOAD_MIN_LIMIT_S = 600;

/** How long a download of a source with this `update-interval` may take, in ms. */
export function downloadLimitMs(updateInterval: number): number {
  return Math.max(updateInterval, DOWNLOAD_MIN_LIMIT_S) * MS_PER_SECOND;
}

/** The EPG source record (spec 1) with defaults applied. */
export interface EpgSourceSpec {
  id: number;
  source: string;
  name: string;
  enable: boolean;
  'update-interval': number;
  login: string;
  password: string;
  cookies: string;
  'content-encoding': number;
  'save-file': boolean;
  trace: boolean;
}

export function sourceSpec(raw: Record<string, unknown>): EpgSourceSpec {
  return {
    id: Number(raw['id']),
    source: str(raw, 'source'),
    name: str(raw, 'name'),
    enable: raw['enable'] === true,
    'update-interval': int(raw, 'update-interval', 3600),
    login: str(raw, 'login'),
    password: str(raw, 'password'),
    cookies: str(raw, 'cookies'),
    'content-encoding': raw['content-encoding'] === 1 ? 1 : 0,
    'save-file': raw['save-file'] === true,
    trace: raw['trace'] === true,
  };
}

export interface SourceStatus {
  state: 'idle' | 'importing' | 'ready' | 'error' | 'disabled';
  message?: string;
  progress?: ImportProgress;
  lastSuccess?: number;
  lastAttempt?: number;
  lastError?: string;
  updates: number;
  channels: number;
  programmes: number;
  /** Programmes the last successful import dropped (bad times, outside retention, no stop). */
  skipped?: number;
  nextUpdate?: number;
}

export class XmltvSource {
  private running: Promise<void> | undefined;
  private abort: AbortController | undefined;
  private pending = false;
  private timer: Timer | undefined;
  private closed = false;
  private st: SourceStatus;

  constructor(
    private rt: EpgRuntime,
    private spec: EpgSourceSpec,
    private log: Logger,
  ) {
    const store = rt.openSource(spec.id);
    const counts = store.db.counts();
    this.st = { state: 'idle', updates: 0, channels: counts.channels, programmes: counts.events };
    rt.refreshers.set(spec.id, () => this.refresh('forced'));
    rt.sourceStatus.set(spec.id, () => this.status());
    if (spec.enable) this.refresh('start');
    else this.st.state = 'disabled';
  }

  status(): SourceStatus {
    return { ...this.st, ...(this.st.progress ? { progress: { ...this.st.progress } } : {}) };
  }

  /** Wait for the import in progress, if any (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  update(next: EpgSourceSpec): void {
    const urlChanged = next.source !== this.spec.source;
    this.spec = next;
    this.timer?.cancel();
    this.timer = undefined;
    if (!next.enable) {
      if (!this.running) this.st.state = 'disabled';
      return;
    }
    if (urlChanged || this.st.state === 'disabled' || this.st.lastSuccess === undefined) {
      this.refresh('config');
    } else this.schedule();
  }

  /** Queue a download now. Returns whether it was queued and the state. */
  refresh(reason: string): { queued: boolean; state: string } {
    if (this.closed) return { queued: false, state: 'closed' };
    if (this.running) {
      this.pending = true;
      return { queued: true, state: 'importing' };
    }
    this.timer?.cancel();
    this.timer = undefined;
    this.running = this.run(reason).finally(() => {
      this.running = undefined;
      if (this.closed) return;
      if (this.pending) {
        this.pending = false;
        this.refresh('queued');
      } else this.schedule();
    });
    return { queued: true, state: 'importing' };
  }

  private schedule(): void {
    if (!this.spec.enable || this.closed) return;
    const ms = this.spec['update-interval'] * MS_PER_SECOND;
    this.st.nextUpdate = Math.floor((this.rt.clock.now() + ms) / MS_PER_SECOND);
    this.timer = this.rt.clock.setTimeout(() => {
      this.timer = undefined;
      this.refresh('scheduled');
    }, ms);
  }

  private async run(reason: string): Promise<void> {
    const id = this.spec.id;
    const staging = join(this.rt.dir, `src-${id}.staging.sqlite`);
    const progress: ImportProgress = { bytes: 0, channels: 0, programmes: 0, skipped: 0 };
    this.st.state = 'importing';
    this.st.progress = progress;
    this.st.lastAttempt = this.rt.nowSec();
    const started = this.rt.clock.monotonic();
    if (this.spec.trace)
      this.log.info({ source: id, reason, url: this.spec.source }, 'EPG import start');
    rmSync(staging, { force: true });
    const db = new EpgDatabase(staging, { staging: true });
    let save: { stream: WriteStream; tmp: string; final: string } | undefined;
    this.abort = new AbortController();
    try {
      const input = await this.open(this.abort.signal);
      if (this.spec['save-file']) save = this.saveTarget();
      await importXmltv(input, db, {
        forceGzip: this.spec['content-encoding'] === 1,
        window: this.rt.retentionWindow(),
        progress,
        ...(save ? { onRaw: (c: Buffer) => void save!.stream.write(c) } : {}),
      });
      if (this.closed) throw new Error('source closed');
      db.setMeta('imported_at', String(this.rt.nowSec()));
      db.close();
      this.rt.openSource(id).swapIn(staging);
      this.rt.sourceChanged(id);
      if (save) await finishSave(save, true);
      this.st.state = 'ready';
      this.st.message = undefined;
      this.st.lastError = undefined;
      this.st.lastSuccess = this.rt.nowSec();
      this.st.updates++;
      this.st.channels = progress.channels;
      this.st.programmes = progress.programmes;
      this.st.skipped = progress.skipped;
      this.log.info(
        { source: id, ...progress, ms: Math.round(this.rt.clock.monotonic() - started) },
        'EPG source imported',
      );
    } catch (err) {
      db.close();
      rmSync(staging, { force: true });
      if (save) await finishSave(save, false);
      const msg = err instanceof Error ? err.message : String(err);
      this.st.state = 'error';
      this.st.message = msg;
      this.st.lastError = msg;
      this.log.warn({ source: id, err: msg }, 'EPG source import failed; previous data kept');
    } finally {
      this.st.progress = undefined;
      this.abort = undefined;
    }
  }

  private saveTarget(): { stream: WriteStream; tmp: string; final: string } {
    const final = join(this.rt.dir, `src-${this.spec.id}.xmltv.download`);
    const tmp = `${final}.part`;
    return { stream: createWriteStream(tmp), tmp, final };
  }

  /** Open the source as a byte stream: a file path / file: URL, or HTTP(S). */
  private async open(signal: AbortSignal): Promise<AsyncIterable<Buffer>> {
    const src = this.spec.source.trim();
    if (/^https?:\/\//i.test(src)) return this.download(src, signal);
    const path = src.startsWith('file:')
      ? fileURLToPath(src)
      : isAbsolute(src)
        ? src
        : resolve(src);
    const stream = createReadStream(path);
    await new Promise<void>((ok, fail) => {
      stream.once('open', () => ok());
      stream.once('error', fail);
    });
    signal.addEventListener('abort', () => stream.destroy(new Error('import aborted')));
    return stream;
  }

  private async download(url: string, signal: AbortSignal): Promise<AsyncIterable<Buffer>> {
    const headers: Record<string, string> = {
      'user-agent': 'sluice-epg',
      'accept-encoding': 'gzip',
    };
    if (this.spec.login || this.spec.password) {
      headers['authorization'] =
        'Basic ' + Buffer.from(`${this.spec.login}:${this.spec.password}`).toString('base64');
    }
    if (this.spec.cookies) headers['cookie'] = this.spec.cookies;
    const ctl = new AbortController();
    signal.addEventListener('abort', () => ctl.abort(signal.reason));
    let idle: Timer | undefined;
    const arm = () => {
      idle?.cancel();
      idle = this.rt.clock.setTimeout(
        () => ctl.abort(new Error(`no data for ${DOWNLOAD_IDLE_MS / 1000} s`)),
        DOWNLOAD_IDLE_MS,
      );
    };
    arm();
    const limitMs = downloadLimitMs(this.spec['update-interval']);
    const overall = this.rt.clock.setTimeout(
      () => ctl.abort(new Error(`not complete after ${limitMs / MS_PER_SECOND} s`)),
      limitMs,
    );
    const stop = () => {
      idle?.cancel();
      overall.cancel();
    };
    let res: Response;
    try {
      res = await fetch(url, { headers, signal: ctl.signal, redirect: 'follow' });
    } catch (err) {
      stop();
      throw new Error(`download failed: ${fetchErrorText(err)}`);
    }
    if (res.status !== 200 || !res.body) {
      stop();
      await res.body?.cancel();
      throw new Error(`download failed: HTTP ${res.status} ${res.statusText}`);
    }
    const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
    return (async function* () {
      try {
        for await (const chunk of body) {
          arm();
          yield chunk as Buffer;
        }
      } catch (err) {
        throw new Error(`download failed: ${fetchErrorText(err)}`);
      } finally {
        stop();
      }
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.abort?.abort();
    await this.idle().catch(() => undefined);
    this.rt.closeSource(this.spec.id);
  }
}

async function finishSave(
  save: { stream: WriteStream; tmp: string; final: string },
  ok: boolean,
): Promise<void> {
  await new Promise<void>((done) => save.stream.end(() => done()));
  if (ok) await rename(save.tmp, save.final);
  else rmSync(save.tmp, { force: true });
}

/** undici says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, a redirect loop, a
 *  TLS problem) is in `cause`, and the operator needs it in the source status. */
export function fetchErrorText(err: unknown): string {
  const e = err as Error & { cause?: unknown };
  const cause = e?.cause as (Error & { code?: string }) | undefined;
  if (cause && typeof cause.message === 'string' && cause.message) {
    const text = cause.message;
    return cause.code && !text.includes(cause.code) ? `${cause.code}: ${text}` : text;
  }
  return e instanceof Error ? e.message : String(err);
}
