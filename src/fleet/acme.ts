// Certificates from an ACME CA (RFC 8555) for the HTTPS listeners: an account key kept in the
// data dir, an order for `acme.domains` answered by HTTP-01 (the admin server serves the
// challenge tokens from `challenges`), the key and certificate written atomically where the
// listeners read them, and a renewal when fewer than `renew-days` remain. Docs: docs/fleet.md.
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import acme from 'acme-client';
import type { Logger } from 'pino';
import type { Clock, Timer } from '../util/clock.ts';
import { deadlineAdapter } from './acme-http.ts';

export interface AcmeSettings {
  directoryUrl: string;
  email: string;
  domains: string[];
  renewDays: number;
}

export type AcmeState = 'starting' | 'ordering' | 'valid' | 'error';

/** How often the certificate's remaining life is looked at. */
const CHECK_MS = 6 * 3600_000;
/** A failed order is tried again after this, doubling up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 60_000;
const RETRY_MAX_MS = 3600_000;
const DAY_MS = 86_400_000;
/** Each request to the CA, whole: a CA answers in well under a second, a slow one in a few; one
 *  that holds a connection longer fails this try of the order (retried as above). */
export const ACME_REQUEST_DEADLINE_MS = 30_000;

// acme-client sends everything through this one axios instance: from here on with our deadline.
acme.axios.defaults.adapter = deadlineAdapter(ACME_REQUEST_DEADLINE_MS);

/** Where the files live under `<data-dir>/acme/`. */
export function acmeFiles(dir: string): { cert: string; key: string; account: string } {
  return {
    cert: path.join(dir, 'cert.pem'),
    key: path.join(dir, 'key.pem'),
    account: path.join(dir, 'account.key'),
  };
}

async function writeAtomic(file: string, data: string | Buffer, mode: number): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, data, { mode });
  await rename(tmp, file);
}

export class AcmeManager {
  /** HTTP-01 tokens and their key authorisations, served at /.well-known/acme-challenge/. */
  readonly challenges = new Map<string, string>();
  state: AcmeState = 'starting';
  lastError: string | undefined;
  notAfter: string | undefined;
  issuedAt: string | undefined;
  private timer: Timer | undefined;
  private retryMs = RETRY_FIRST_MS;
  private running: Promise<void> | undefined;
  private closed = false;
  readonly files: ReturnType<typeof acmeFiles>;

  constructor(
    private settings: AcmeSettings,
    private readonly o: {
      dir: string;
      log: Logger;
      clock: Clock;
      /** Runs after a new certificate is on disk. */
      onIssued: () => void;
    },
  ) {
    this.files = acmeFiles(o.dir);
  }

  start(): void {
    this.schedule(0);
  }

  update(next: AcmeSettings): void {
    const reorder =
      next.directoryUrl !== this.settings.directoryUrl ||
      next.domains.join() !== this.settings.domains.join();
    this.settings = next;
    if (reorder) this.schedule(0, true);
  }

  private schedule(ms: number, force = false): void {
    if (this.closed) return;
    this.timer?.cancel();
    this.timer = this.o.clock.setTimeout(() => {
      this.running ??= this.check(force).finally(() => {
        this.running = undefined;
      });
    }, ms);
  }

  /** The certificate on disk covers the domains and has more than `renew-days` left. */
  private async current(): Promise<X509Certificate | undefined> {
    try {
      const x = new X509Certificate(await readFile(this.files.cert));
      const names = (x.subjectAltName ?? '')
        .split(', ')
        .map((n) => n.replace(/^DNS:|^IP Address:/, ''));
      if (!this.settings.domains.every((d) => names.includes(d))) return undefined;
      return x;
    } catch {
      return undefined;
    }
  }

  private async check(force: boolean): Promise<void> {
    const x = force ? undefined : await this.current();
    const left = x ? Date.parse(x.validTo) - this.o.clock.now() : 0;
    if (x && left > this.settings.renewDays * DAY_MS) {
      this.state = 'valid';
      this.notAfter = new Date(x.validTo).toISOString();
      this.schedule(Math.min(CHECK_MS, left - this.settings.renewDays * DAY_MS));
      return;
    }
    this.state = 'ordering';
    try {
      await this.order();
      this.retryMs = RETRY_FIRST_MS;
      this.state = 'valid';
      this.lastError = undefined;
      this.schedule(CHECK_MS);
      this.o.onIssued();
    } catch (e) {
      this.state = 'error';
      this.lastError = (e as Error).message;
      this.o.log.warn(
        { err: e, domains: this.settings.domains, retryInSec: this.retryMs / 1000 },
        'ACME order failed',
      );
      this.schedule(this.retryMs);
      this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    }
  }

  private async accountKey(): Promise<Buffer> {
    try {
      return await readFile(this.files.account);
    } catch {
      const key = await acme.crypto.createPrivateEcdsaKey();
      await writeAtomic(this.files.account, key, 0o600);
      return key;
    }
  }

  private async order(): Promise<void> {
    const { domains, directoryUrl, email } = this.settings;
    if (domains.length === 0)
      throw new Error('acme.domains is empty: name the domains the certificate covers');
    await mkdir(this.o.dir, { recursive: true, mode: 0o700 });
    const client = new acme.Client({ directoryUrl, accountKey: await this.accountKey() });
    const [key, csr] = await acme.crypto.createCsr({ commonName: domains[0]!, altNames: domains });
    this.o.log.info({ domains, directoryUrl }, 'ACME: ordering a certificate');
    const cert = await client.auto({
      csr,
      ...(email ? { email } : {}),
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      // The CA checks the challenge itself; a self-check would need port 80 on this host.
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        this.challenges.set(challenge.token, keyAuthorization);
      },
      challengeRemoveFn: async (_authz, challenge) => {
        this.challenges.delete(challenge.token);
      },
    });
    // The key first: a listener that sees the new certificate then finds its key.
    await writeAtomic(this.files.key, key, 0o600);
    await writeAtomic(this.files.cert, cert, 0o644);
    const x = new X509Certificate(cert);
    this.notAfter = new Date(x.validTo).toISOString();
    this.issuedAt = new Date(this.o.clock.now()).toISOString();
    this.o.log.info({ domains, notAfter: this.notAfter }, 'ACME: certificate issued');
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.challenges.clear();
  }
}
