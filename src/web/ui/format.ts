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

/** The state words of a stream and the class that colours them. */
export const STATE_CLASS: Readonly<Record<string, string>> = {
  running: 'ok',
  starting: 'warn',
  paused: 'muted',
  'no-signal': 'bad',
  error: 'bad',
};
