// Structured JSON logging (pino). One root logger; resources take child loggers.
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(opts: { level?: string; destination?: number | string } = {}): Logger {
  const level = opts.level ?? process.env['SLUICE_LOG_LEVEL'] ?? 'info';
  return pino({ level, base: { app: 'sluice' } }, pino.destination(opts.destination ?? 1));
}

/** A logger that writes nothing, for tests. */
export const silentLogger: Logger = pino({ level: 'silent' });
