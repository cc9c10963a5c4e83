// Alerts: the active ones (live from the events stream) and the recent history (/data/alerts).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { time } from '../format.ts';
import { type Alert, alertLog, alerts } from '../live.ts';

export function AlertsPage() {
  const [recent, setRecent] = useState<Alert[]>([]);
  // The history up to now once; what happens after arrives on the events stream.
  useEffect(() => {
    api<{ recent: Alert[] }>('/data/alerts?limit=100')
      .then((r) => setRecent(r.body.recent))
      .catch(() => {});
  }, []);
  const seen = new Set(alertLog.value.map((a) => `${a.id}/${a.event}/${a.at}`));
  const history = [
    ...alertLog.value,
    ...recent.filter((a) => !seen.has(`${a.id}/${a.event}/${a.at}`)),
  ];
  return (
    <section class="page" aria-labelledby="alerts-h">
      <h1 id="alerts-h">Alerts</h1>
      <h2>Active ({alerts.value.length})</h2>
      {alerts.value.length === 0 ? <p class="muted">None.</p> : null}
      <ul class="alerts" data-testid="active-alerts">
        {alerts.value.map((a) => (
          <li key={a.key} class={`sev-${a.severity}`}>
            <strong>{a.severity}</strong> {a.message} <small>since {time(a.since)}</small>
          </li>
        ))}
      </ul>
      <h2>History</h2>
      <table class="grid" aria-label="Alert history">
        <thead>
          <tr>
            <th>Time</th>
            <th>Event</th>
            <th>Severity</th>
            <th>Message</th>
          </tr>
        </thead>
        <tbody>
          {history.map((a, n) => (
            <tr key={n}>
              <td>{time(a.at ?? a.raisedAt)}</td>
              <td>{a.event}</td>
              <td>{a.severity}</td>
              <td>{a.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
