// Archive storages (/data/dvr-storage-list, docs/dvr.md): state, fill, the server's forecast of
// when max-usage is reached at the current write rate, the cleanup activity and the streams.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { bytes } from '../format.ts';

/** The fields of a storage's status record (src/dvr/status.ts) this page shows. */
export interface StorageStatus {
  id: number;
  name: string;
  'dir-path': string;
  state: string;
  message: string;
  'total-bytes': number;
  'free-bytes': number;
  'used-bytes': number;
  'used-percent': number;
  'archived-bytes': number;
  'disk-full-alarm': boolean;
  'active-task': { name: string; 'running-sec': number };
  'last-cleanup': {
    'orphans-sec-ago': number | null;
    'orphans-deleted': number;
    'pressure-trim-sec-ago': number | null;
    'pressure-trim-freed-bytes': number;
  };
  'write-rate-bytes-per-sec': number;
  'full-forecast-sec': number | null;
  streams: { name: string; active: boolean }[];
}

const REFRESH_MS = 10_000;
const STATE_CLASS: Record<string, string> = { ready: 'ok', error: 'bad', 'not-ready': 'warn' };

/** Seconds as the largest unit or two that matter: `3 d 4 h`, `2 h 5 min`, `40 s`. */
export function duration(sec: number): string {
  const s = Math.round(sec);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

function ago(sec: number | null): string {
  return sec === null ? 'never' : `${duration(sec)} ago`;
}

function cleanup(s: StorageStatus): string {
  const task = s['active-task'];
  const c = s['last-cleanup'];
  const parts = [task.name !== 'none' ? `${task.name} (${duration(task['running-sec'])})` : 'idle'];
  parts.push(`orphans ${ago(c['orphans-sec-ago'])} (${c['orphans-deleted']} deleted)`);
  parts.push(
    `size trim ${ago(c['pressure-trim-sec-ago'])}${c['pressure-trim-freed-bytes'] ? ` (${bytes(c['pressure-trim-freed-bytes'])} freed)` : ''}`,
  );
  return parts.join(' · ');
}

export function StoragesPage() {
  const [list, setList] = useState<StorageStatus[] | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    const load = () =>
      api<StorageStatus[]>('/data/dvr-storage-list')
        .then((r) => {
          setList(r.body);
          setError('');
        })
        .catch((e: Error) => setError(e.message));
    void load();
    // Storage fill moves slowly and is not on the events stream: one read every 10 s.
    const t = setInterval(load, REFRESH_MS);
    return () => clearInterval(t);
  }, []);
  if (!list) {
    return <section class="page">{error ? <p class="error">{error}</p> : <p>Loading…</p>}</section>;
  }
  return (
    <section class="page" aria-labelledby="st-h">
      <h1 id="st-h">Storages</h1>
      {error ? <p class="error">{error}</p> : null}
      {list.length === 0 ? <p class="muted">No archive storage configured.</p> : null}
      <table class="grid" aria-label="Storages">
        <thead>
          <tr>
            <th>Storage</th>
            <th>State</th>
            <th>Fill</th>
            <th>Free</th>
            <th>Writing</th>
            <th>Full in</th>
            <th>Cleanup</th>
            <th>Streams</th>
          </tr>
        </thead>
        <tbody>
          {list.map((s) => {
            const forecast = s['full-forecast-sec'];
            return (
              <tr key={s.id} data-storage={s.name} data-state={s.state}>
                <td>
                  <strong>{s.name}</strong> <small class="muted">{s['dir-path']}</small>
                </td>
                <td>
                  <span class={`badge ${STATE_CLASS[s.state] ?? 'muted'}`}>{s.state}</span>
                  {s['disk-full-alarm'] ? <span class="badge bad">disk full</span> : null}
                  {s.message ? <small class="muted"> {s.message}</small> : null}
                </td>
                <td data-testid="fill">
                  <meter min={0} max={100} value={s['used-percent']} /> {s['used-percent']}% of{' '}
                  {bytes(s['total-bytes'])} ({bytes(s['archived-bytes'])} archive)
                </td>
                <td data-testid="free">{bytes(s['free-bytes'])}</td>
                <td>{bytes(s['write-rate-bytes-per-sec'])}/s</td>
                <td data-testid="full-in">
                  {forecast === null ? 'not growing' : duration(forecast)}
                </td>
                <td>
                  <small>{cleanup(s)}</small>
                </td>
                <td>{s.streams.map((a) => a.name).join(', ') || '—'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
