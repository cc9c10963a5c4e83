// Structured JSON logging (pino). One root logger; resources take child loggers. Credentials in a
// line's message or top-level fields (a URL with a token or a password) are masked.
import pino, { type Logger } from 'pino';
import { maskCredentials } from './util/credentials.ts';

export type { Logger };

export function createLogger(opts: { level?: string; destination?: number | string } = {}): Logger {
  const level = opts.level ?? process.env['SLUICE_LOG_LEVEL'] ?? 'info';
  return pino(
    { level, base: { app: 'sluice' }, hooks: { logMethod: maskedLine } },
    pino.destination(opts.destination ?? 1),
  );
}

/** pino's logMethod hook: the call's strings and its object's string fields, masked. */
function maskedLine(this: Logger, args: unknown[], write: (...a: unknown[]) => void): void {
  write.apply(this, args.map(maskedArg));
}

function maskedArg(a: unknown): unknown {
  if (typeof a === 'string') return maskCredentials(a);
  if (a instanceof Error) return maskedError(a);
  if (a === null || typeof a !== 'object' || Array.isArray(a)) return a;
  let copy: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(a)) {
    if (typeof v !== 'string' && !(v instanceof Error)) continue;
    const m = typeof v === 'string' ? maskCredentials(v) : maskedError(v);
    if (m === v) continue;
    copy ??= { ...a };
    copy[k] = m;
  }
  return copy ?? a;
}

/** `e` itself when its message and stack hold no credential, else a copy (same class, so the
 *  log's error serializer names it as before) with both masked: an origin's error quotes the
 *  URL it failed on. */
function maskedError(e: Error): Error {
  const message = maskCredentials(e.message);
  const stack = e.stack === undefined ? undefined : maskCredentials(e.stack);
  if (message === e.message && stack === e.stack) return e;
  const copy = Object.assign(Object.create(Object.getPrototypeOf(e)) as Error, e);
  Object.defineProperty(copy, 'message', { value: message, enumerable: false, writable: true });
  Object.defineProperty(copy, 'stack', { value: stack, enumerable: false, writable: true });
  return copy;
}

/** A logger that writes nothing, for tests. */
export const silentLogger: Logger = pino({ level: 'silent' });
