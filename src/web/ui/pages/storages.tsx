// Archive storages (/data/dvr-storage-list): state, fill, and when the disk is full at the rate
// seen while this page is open.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { bytes } from '../format.ts';

type Rec = Record<string, unknown>;
const REFRESH_MS = 10_000;

/** A number out of a status record, whichever of the names it has. */
const num = (r: Rec, ...names: string[]) => {
  for (const n of names) if (typeof r[n] === 'number') return r[n] as number;
  return undefined;
};

export function StoragesPage() {
  const [list, setList] = useState<Rec[] | null>(null);
  const [error, setError] = useState('');
  const first = useRef(new Map<string, { t: number; used: number }>());
  useEffect(() => {
    const load = () =>
      api<Rec[] | { storage?: Rec[] }>('/data/dvr-storage-list')
        .then((r) => setList(Array.isArray(r.body) ? r.body : (r.body.storage ?? [])))
        .catch((e: Error) => setError(e.message));
    void load();
    // Storage fill moves slowly and is not on the events stream: one read every 10 s.
    const t = setInterval(load, REFRESH_MS);
    return () => clearInterval(t);
  }, []);
  if (error) return <p class="error">{error}</p>;
  if (!list) return <section class="page">Loading…</section>;
  return (
    <section class="page" aria-labelledby="st-h">
      <h1 id="st-h">Storages</h1>
      {list.length === 0 ? <p class="muted">No archive storage configured.</p> : null}
      <table class="grid" aria-label="Storages">
        <thead>
          <tr>
            <th>Storage</th>
            <th>State</th>
            <th>Used</th>
            <th>Free</th>
            <th>Full in</th>
          </tr>
        </thead>
        <tbody>
          {list.map((s) => {
            const id = String(s['id'] ?? s['name'] ?? '');
            const used = num(s, 'usedBytes', 'used', 'size');
            const free = num(s, 'freeBytes', 'free', 'avail');
            let fullIn = '—';
            if (used !== undefined && free !== undefined) {
              const f = first.current.get(id);
              if (!f) first.current.set(id, { t: Date.now(), used });
              else if (used > f.used) {
                const perSec = (used - f.used) / ((Date.now() - f.t) / 1000);
                fullIn = `${(free / perSec / 3600).toFixed(1)} h`;
              }
            }
            return (
              <tr key={id}>
                <td>{String(s['name'] ?? id)}</td>
                <td>{String(s['state'] ?? '')}</td>
                <td>{used !== undefined ? bytes(used) : '—'}</td>
                <td>{free !== undefined ? bytes(free) : '—'}</td>
                <td>{fullIn}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
