// One external XMLTV source (EPG source record): scheduled and forced downloads from a file or
// HTTP(S) URL into a staging database that replaces the live one only when the whole import
// succeeded. Failures keep the previous data and show in the status.
import { createWriteStream, rmSync, type WriteStream } from 'node:fs';
import { rename } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { EpgSourceApplied } from '../config/spec-types.generated.ts';
import type { Timer } from '../util/clock.ts';
import { EpgDatabase } from './database.ts';
import type { EpgRuntime } from './runtime.ts';
import { type ImportProgress, importXmltv } from './xmltv-import.ts';
import {
  downloadLimitMs,
  openFileSource,
  openHttpSource,
  type SourceInput,
} from './xmltv-input.ts';

const MS_PER_SECOND = 1000;

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
    private spec: EpgSourceApplied,
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

  update(next: EpgSourceApplied): void {
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
    let input: SourceInput | undefined;
    this.abort = new AbortController();
    try {
      input = await this.open(this.abort.signal);
      if (this.spec['save-file']) save = this.saveTarget();
      await importXmltv(input.chunks, db, {
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
      // The descriptor, request and timers go on every path, failure included: a request or
      // timer left behind would keep the process alive after SIGTERM.
      await input?.close();
      this.st.progress = undefined;
      this.abort = undefined;
    }
  }

  private saveTarget(): { stream: WriteStream; tmp: string; final: string } {
    const final = join(this.rt.dir, `src-${this.spec.id}.xmltv.download`);
    const tmp = `${final}.part`;
    return { stream: createWriteStream(tmp), tmp, final };
  }

  /** Open the source: a file path / file: URL, or HTTP(S). */
  private open(signal: AbortSignal): Promise<SourceInput> {
    const src = this.spec.source.trim();
    if (/^https?:\/\//i.test(src)) {
      const headers: Record<string, string> = {
        'user-agent': 'sluice-epg',
        'accept-encoding': 'gzip',
      };
      if (this.spec.login || this.spec.password) {
        headers['authorization'] =
          'Basic ' + Buffer.from(`${this.spec.login}:${this.spec.password}`).toString('base64');
      }
      if (this.spec.cookies) headers['cookie'] = this.spec.cookies;
      return openHttpSource(src, {
        headers,
        clock: this.rt.clock,
        signal,
        limitMs: downloadLimitMs(this.spec['update-interval']),
      });
    }
    const path = src.startsWith('file:')
      ? fileURLToPath(src)
      : isAbsolute(src)
        ? src
        : resolve(src);
    return openFileSource(path, this.rt.clock, signal);
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
