// Restarting an input whose listening endpoint changed: the new one is bound before the old
// closes, so a port another program holds leaves the old input receiving and the change failed.

import type { Clock, Timer } from '../util/clock.ts';
import type { InputMode, InputRunner } from './input-runner.ts';

/** A new listener that has not bound in this long has failed (libsrt, librist and the RTMP
 *  server report a bind failure after start() returned). */
export const INPUT_BIND_DEADLINE_MS = 5000;

/** Record fields that say where an input receives: records equal in all of them contend for one
 *  socket, so a restart between them closes the old input first. */
const ENDPOINT_FIELDS = [
  'type',
  'port',
  'address',
  'bind-if',
  'ssm-address',
  'listen-mode',
  'url',
  'rist-addr-port',
  'rist-addr-address',
  'rist-addr-intf',
] as const;

export function sameEndpoint(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return ENDPOINT_FIELDS.every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
}

/** The local port a record receives on, 0 when none is known (an RTMP url carries its own). */
function portOf(cfg: Record<string, unknown>): number {
  if (typeof cfg['port'] === 'number') return cfg['port'];
  const m = typeof cfg['url'] === 'string' ? /^rtmp:\/\/[^/]*:(\d+)\//.exec(cfg['url']) : null;
  return m ? Number(m[1]) : 0;
}

/** host:port (or the url) of a record, for messages. */
function whereOf(cfg: Record<string, unknown>): string {
  if (typeof cfg['url'] === 'string') return cfg['url'];
  const host =
    [cfg['address'], cfg['bind-if']].find((v) => typeof v === 'string' && v) ?? '0.0.0.0';
  return `${String(host)}:${portOf(cfg)}`;
}

const ERRNO_WORDS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another program holds the port)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not available on this host',
  ENODEV: 'no such interface',
};

export interface InputMove {
  index: number;
  old: InputRunner;
  mode: Exclude<InputMode, 'off'>;
  clock: Clock;
  /** A runner of `cfg` for this input, not opened. */
  make(cfg: Record<string, unknown>): InputRunner;
  /** Make `r` the input's runner (its packets reach the stream from then on). */
  install(r: InputRunner): void;
}

/**
 * Open the new runner beside the old, then close the old. When the new one cannot bind, the old
 * keeps running and this throws what is wrong and what to do. On the same port number the old
 * socket may be what holds it: then the old closes, the new tries again, and on failure a runner
 * of the old record takes its place before this throws.
 */
export async function moveInput(m: InputMove, cfg: Record<string, unknown>): Promise<void> {
  const fresh = m.make(cfg);
  const err = await tryOpen(fresh, m);
  if (!err) {
    m.install(fresh);
    await m.old.close();
    return;
  }
  if (portOf(cfg) === 0 || portOf(cfg) !== portOf(m.old.cfg)) {
    const e = moveError(m, cfg, err, true);
    m.old.moveError = e.message;
    throw e;
  }
  await m.old.close();
  const again = m.make(cfg);
  const err2 = await tryOpen(again, m);
  if (!err2) return m.install(again);
  const back = m.make(m.old.cfg);
  back.open(m.mode);
  m.install(back);
  const e = moveError(m, cfg, err2, false);
  back.moveError = e.message;
  throw e;
}

/** Open `r` and wait until it binds: the error when it cannot (`r` closed then), else null. */
async function tryOpen(r: InputRunner, m: InputMove): Promise<Error | null> {
  r.open(m.mode);
  let timer: Timer | null = null;
  const deadline = new Promise<never>((_, reject) => {
    timer = m.clock.setTimeout(
      () => reject(new Error(`not bound within ${INPUT_BIND_DEADLINE_MS} ms`)),
      INPUT_BIND_DEADLINE_MS,
    );
  });
  try {
    await Promise.race([r.opened(), deadline]);
    return null;
  } catch (err) {
    await r.close();
    return err instanceof Error ? err : new Error(String(err));
  } finally {
    (timer as Timer | null)?.cancel();
  }
}

function moveError(m: InputMove, cfg: Record<string, unknown>, err: Error, kept: boolean): Error {
  const code = (err as Error & { code?: string }).code ?? '';
  const words = ERRNO_WORDS[code] ?? err.message;
  const detail = words === err.message ? words : `${words}: ${err.message}`;
  const type = String(cfg['type'] ?? '');
  const still = kept
    ? `it keeps receiving on ${whereOf(m.old.cfg)}`
    : `it is back on ${whereOf(m.old.cfg)}`;
  return new Error(
    `input ${m.index} (${type}) cannot listen on ${whereOf(cfg)}: ${detail}; ${still}. ` +
      'Free the port or choose another one: the change is retried.',
  );
}
