// The certificate and key files of a running HTTPS listener, reloaded when either changes on
// disk (a renewal, an ACME order, an operator's copy): the new pair goes into the server with
// setSecureContext, so new handshakes get it and open connections keep going. A pair that does
// not load (one file written, the other not yet; a broken file) keeps the old one in service.

import { X509Certificate } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';

/** Writes of a renewal arrive as several events; they are taken together after this quiet. */
const SETTLE_MS = 200;

/** What a listener serves now, for status (and for tests to see a reload happen). */
export interface CertificateInfo {
  subject: string;
  notAfter: string;
  fingerprint256: string;
  /** ISO time of the last reload (absent: still the pair read at start). */
  reloadedAt?: string;
  /** Why the files on disk are not in service (the previous pair is). */
  lastError?: string;
}

export function certificateInfo(cert: Buffer): CertificateInfo {
  const x = new X509Certificate(cert);
  return {
    subject: x.subject.replace(/\n/g, ', '),
    notAfter: new Date(x.validTo).toISOString(),
    fingerprint256: x.fingerprint256,
  };
}

interface SecureServer {
  setSecureContext(options: { cert: Buffer; key: Buffer }): void;
}

export class TlsFiles {
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private current: CertificateInfo;
  private closed = false;

  constructor(
    private readonly cert: string,
    private readonly key: string,
    private readonly server: SecureServer,
    private readonly log: Logger,
    /** The pair the server was created with. */
    served: Buffer,
  ) {
    this.current = certificateInfo(served);
    const names = new Map<string, Set<string>>();
    for (const f of [cert, key]) {
      const dir = path.dirname(path.resolve(f));
      const set = names.get(dir) ?? new Set<string>();
      set.add(path.basename(f));
      names.set(dir, set);
    }
    // The directories, not the files: a renewal usually replaces a file by a rename.
    for (const [dir, files] of names) {
      try {
        const w = watch(dir, (_event, name) => {
          if (name === null || files.has(name.toString())) this.soon();
        });
        w.on('error', (err) => this.log.warn({ err, dir }, 'certificate watch failed'));
        this.watchers.push(w);
      } catch (err) {
        this.log.warn({ err, dir }, 'certificate files are not watched: a change needs a restart');
      }
    }
  }

  info(): CertificateInfo {
    return { ...this.current };
  }

  private soon(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), SETTLE_MS);
  }

  /** Read the pair again and put it in service if it loads; true when it did. */
  async reload(): Promise<boolean> {
    try {
      const [cert, key] = await Promise.all([readFile(this.cert), readFile(this.key)]);
      // Checked first: a certificate that does not match its key is refused here.
      createSecureContext({ cert, key });
      const next = certificateInfo(cert);
      if (this.closed) return false;
      if (next.fingerprint256 === this.current.fingerprint256 && !this.current.lastError)
        return false;
      this.server.setSecureContext({ cert, key });
      this.current = { ...next, reloadedAt: new Date().toISOString() };
      this.log.info(
        { subject: next.subject, notAfter: next.notAfter },
        'HTTPS certificate reloaded',
      );
      return true;
    } catch (e) {
      const why = (e as Error).message;
      if (this.current.lastError !== why)
        this.log.warn(
          { cert: this.cert, key: this.key, why },
          'new HTTPS certificate not loaded; the previous one stays',
        );
      this.current = { ...this.current, lastError: why };
      return false;
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const w of this.watchers) w.close();
    this.watchers = [];
  }
}
