// Tables of the stream page: the switch log and the programmes with their PIDs.
import { time } from '../format.ts';

type Rec = Record<string, unknown>;

export function Switches({
  list,
}: {
  list: { at: string; from: number; to: number; reason: string }[];
}) {
  if (list.length === 0) return <p class="muted">No switches.</p>;
  return (
    <table class="grid" aria-label="Switch log" data-testid="switches">
      <thead>
        <tr>
          <th>Time</th>
          <th>From</th>
          <th>To</th>
          <th>Reason</th>
        </tr>
      </thead>
      <tbody>
        {[...list].reverse().map((w, n) => (
          <tr key={n}>
            <td>{time(w.at)}</td>
            <td>input {w.from + 1}</td>
            <td>input {w.to + 1}</td>
            <td>{w.reason}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const hex = (n: unknown) => (typeof n === 'number' ? `${n} (0x${n.toString(16)})` : '—');

export function Programmes({ list }: { list: Rec[] }) {
  if (list.length === 0) return <p class="muted">No programme seen yet.</p>;
  return (
    <table class="grid" aria-label="Programmes">
      <thead>
        <tr>
          <th>Programme</th>
          <th>Name</th>
          <th>PMT PID</th>
          <th>PCR PID</th>
          <th>Elementary streams</th>
        </tr>
      </thead>
      <tbody>
        {list.map((p) => (
          <tr key={String(p['pnr'])}>
            <td>{String(p['pnr'])}</td>
            <td>
              {String(p['name'] ?? '')} <small>{String(p['provider'] ?? '')}</small>
            </td>
            <td>{hex(p['pmtPid'])}</td>
            <td>{hex(p['pcrPid'])}</td>
            <td>
              {((p['streams'] as Rec[] | undefined) ?? []).map((e) => (
                <div key={String(e['pid'])}>
                  {hex(e['pid'])} {String(e['kind'] ?? '')} {String(e['codec'] ?? '')}
                  {e['language'] ? ` ${String(e['language'])}` : ''}
                </div>
              ))}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
