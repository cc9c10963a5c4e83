// How figures read on the dashboard.

export function rate(kbps: number): string {
  if (kbps >= 10_000) return `${(kbps / 1000).toFixed(1)} Mbit/s`;
  return `${kbps} kbit/s`;
}

export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

export function time(iso: string | number): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleTimeString();
}

/** A moment as a person reads it: local date and time, and how long ago (`12/7/2026, 8:59:04 PM
 *  (4 s ago)`); `now` for tests. */
export function when(ms: number, now = Date.now()): string {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return String(ms);
  return `${d.toLocaleString()} (${ago(now - ms)})`;
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** The state words of a stream and the class that colours them. */
export const STATE_CLASS: Readonly<Record<string, string>> = {
  running: 'ok',
  starting: 'warn',
  paused: 'muted',
  'no-signal': 'bad',
  error: 'bad',
};

/** Spec 1's delivery systems (`type`: the kernel's SYS_* numbers). */
export const DELIVERY_SYSTEM: Readonly<Record<number, string>> = {
  1: 'DVB-C',
  2: 'DVB-C annex B',
  3: 'DVB-T',
  5: 'DVB-S',
  6: 'DVB-S2',
  16: 'DVB-T2',
  18: 'DVB-C annex C',
};

/** A tuner adapter's modes (spec 1's `mode`). */
export const ADAPTER_MODE: Readonly<Record<number, string>> = {
  0: 'stream',
  1: 'scanner',
  2: 'monitor',
};

/** A tuner adapter's states and their colours: no lock and error are faults, unassigned and
 *  starting wait for something. */
export const ADAPTER_STATE_CLASS: Readonly<Record<string, string>> = {
  locked: 'ok',
  ready: 'ok',
  paused: 'muted',
  closed: 'muted',
  starting: 'warn',
  unassigned: 'warn',
  'no lock': 'bad',
  error: 'bad',
};

/** kHz as the unit an operator reads: MHz with the kHz kept. */
export function frequency(khz: number | null, intermediate = false): string {
  if (khz === null) return '—';
  return `${intermediate ? 'IF ' : ''}${(khz / 1000).toFixed(3)} MHz`;
}

/** A figure with its unit, or a dash when the frontend does not report it. */
export function figure(v: number | null, unit: string, digits = 1): string {
  return v === null ? '—' : `${v.toFixed(digits)} ${unit}`;
}

/** A bit error ratio in scientific notation (`2.0e-6`), 0 as `0`. */
export function ratio(v: number | null): string {
  if (v === null) return '—';
  return v === 0 ? '0' : v.toExponential(1);
}
