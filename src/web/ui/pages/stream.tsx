// One stream: state and bit-rate chart, inputs with their failover state and the switch log,
// programmes and PIDs, outputs and playback URLs (click to play), archive, EPG now/next.
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, api } from '../api.ts';
import { RateChart } from '../chart.tsx';
import { bytes, rate, STATE_CLASS, time, when } from '../format.ts';
import { alerts, history, me, rows, streamAlerts, touched, version } from '../live.ts';
import { Player } from '../player.tsx';
import { href } from '../router.ts';
import { useThrottledReload } from '../throttle.ts';
import { ChangeInput } from './config-forms.tsx';
import { Guide } from './stream-guide.tsx';
import { Programmes, Switches } from './stream-tables.tsx';

type Rec = Record<string, unknown>;
export interface StreamStatus extends Rec {
  key: string;
  id: number;
  name: string;
  state: string;
  message?: string;
  activeInput: number;
  inputs: Rec[];
  outputs: Rec[];
  switches: { at: string; from: number; to: number; reason: string }[];
  programs: Rec[];
  httpTs?: Rec;
  ott?: Rec & { mode?: number; dvr?: Rec };
}

/** Fetch at most this often while deltas for the stream keep coming. */
const REFRESH_MS = 1000;

/** The playback URLs the stream's OTT mode offers (docs/ott.md). */
function playbackUrls(s: StreamStatus): { label: string; url: string; hls: boolean }[] {
  const base = `${location.origin}/${encodeURIComponent(s.name)}/`;
  const out: { label: string; url: string; hls: boolean }[] = [];
  // /{name}/mpegts answers only with ott-http 1 (a 404 otherwise): no link to a 404.
  if (s.httpTs?.['enabled'] === true)
    out.push({ label: 'HTTP-TS', url: `${base}mpegts`, hls: false });
  const mode = s.ott?.mode ?? 0;
  if (mode === 1 || mode === 3) out.push({ label: 'HLS', url: `${base}index.m3u8`, hls: true });
  if (mode === 2) out.push({ label: 'HLS (CMAF)', url: `${base}index.m3u8`, hls: true });
  if (mode === 3) out.push({ label: 'HLS (CMAF)', url: `${base}cmaf.m3u8`, hls: true });
  if (mode >= 2) out.push({ label: 'DASH', url: `${base}index.mpd`, hls: false });
  return out;
}

function Inputs({ s }: { s: StreamStatus }) {
  return (
    <table class="grid" aria-label="Inputs">
      <thead>
        <tr>
          <th>#</th>
          <th>Type</th>
          <th>Failover</th>
          <th>State</th>
          <th>Validity</th>
          <th>Bit rate</th>
          <th title="TR 101 290 errors since the input started">P1 / P2 total</th>
        </tr>
      </thead>
      <tbody>
        {s.inputs.map((i, n) => (
          <tr key={n} class={n === s.activeInput ? 'active' : ''} data-input={n}>
            <td>
              {n + 1}
              {n === 0 ? ' primary' : ' backup'}
            </td>
            <td>{String(i['type'] ?? '')}</td>
            <td>{n === s.activeInput ? <strong>active</strong> : String(i['mode'] ?? '')}</td>
            <td>{String(i['state'] ?? '')}</td>
            <td>{String(i['validity'] ?? '—')}</td>
            <td>
              {typeof i['bitrate'] === 'number' ? rate(Math.round(i['bitrate'] / 1000)) : '—'}
            </td>
            <td>
              {String(i['priority1'] ?? 0)} / {String(i['priority2'] ?? 0)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The archive's figures as a person reads them (src/dvr/attach.ts names them). */
const ARCHIVE_FIELDS: Readonly<Record<string, [string, (v: unknown) => string]>> = {
  storage: ['storage', (v) => `#${String(v)}`],
  recording: ['recording', (v) => (v ? 'yes' : 'no (the storage does not take writes)')],
  chunks: ['chunks written', String],
  bytes: ['written', (v) => (typeof v === 'number' ? bytes(v) : String(v))],
  dropped: ['chunks dropped', String],
  failed: ['writes failed', String],
  lastWriteAt: ['last write', (v) => (typeof v === 'number' && v > 0 ? when(v) : 'none yet')],
};

function Archive({ dvr }: { dvr: Rec | undefined }) {
  if (!dvr?.['storage']) return <p class="muted">No archive (dvr-storage 0).</p>;
  return (
    <dl class="kv" data-testid="archive">
      {Object.entries(dvr).map(([k, v]) => {
        const [label, show] = ARCHIVE_FIELDS[k] ?? [
          k,
          (x: unknown) => (typeof x === 'object' ? JSON.stringify(x) : String(x)),
        ];
        return (
          <div key={k}>
            <dt>{label}</dt>
            <dd data-field={k}>{show(v)}</dd>
          </div>
        );
      })}
    </dl>
  );
}

async function setPause(s: StreamStatus, pause: boolean): Promise<void> {
  const id = s.id > 0 ? String(s.id) : s.name;
  await api(`/config/stream/${encodeURIComponent(id)}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    json: { pause },
  });
}

export function StreamPage({ id }: { id: string }) {
  const [s, setS] = useState<StreamStatus | null>(null);
  const [error, setError] = useState('');
  const [playing, setPlaying] = useState('');
  const [busy, setBusy] = useState(false);

  const load = () =>
    api<StreamStatus>(`/data/stream/${encodeURIComponent(id)}`)
      .then((r) => {
        setS(r.body);
        setError('');
      })
      .catch((e: ApiError) => setError(e.message));

  useEffect(() => {
    void load();
  }, [id]);
  // Refetch when the feed says this stream changed: at once for a switch or a new state,
  // else at most once a second.
  const row = rows.get(id);
  const t = touched.value;
  useEffect(() => {
    if (t.key === id) void load();
  }, [t.n]);
  useThrottledReload(row, load, REFRESH_MS);

  if (error && !s) {
    return (
      <section class="page">
        <p class="error" role="alert">
          {error}
        </p>
        <a href={href('streams')}>Back to streams</a>
      </section>
    );
  }
  if (!s) return <section class="page">Loading…</section>;
  const admin = me.value?.role === 'admin';
  const paused = s.state === 'paused';
  const a = streamAlerts(s.name, alerts.value);
  return (
    <section class="page stream" aria-labelledby="stream-h">
      <div class="toolbar">
        <a href={href('streams')}>← Streams</a>
        <h1 id="stream-h">{s.name}</h1>
        <span class={`badge ${STATE_CLASS[s.state] ?? 'muted'}`} data-testid="state">
          {s.state}
        </span>
        {s.message ? <span class="muted">{s.message}</span> : null}
        {admin ? (
          <button
            type="button"
            disabled={busy}
            data-testid="pause"
            onClick={() => {
              setBusy(true);
              setPause(s, !paused)
                .then(load)
                .catch((e: ApiError) => setError(e.message))
                .finally(() => setBusy(false));
            }}
          >
            {paused ? 'Resume' : 'Pause'}
          </button>
        ) : null}
      </div>
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
      {a.length ? (
        <ul class="alerts" aria-label="Active alerts">
          {a.map((x) => (
            <li key={x.key} class={`sev-${x.severity}`}>
              {x.message} <small>since {time(x.since)}</small>
            </li>
          ))}
        </ul>
      ) : null}
      <h2>Bit rate</h2>
      <RateChart series={history.get(s.key)} tick={version.value} />
      <h2>Inputs</h2>
      <Inputs s={s} />
      {admin ? (
        <ChangeInput stream={s.id > 0 ? String(s.id) : s.name} onDone={() => void load()} />
      ) : null}
      <h2>Switch log</h2>
      <Switches list={s.switches} />
      <h2>Programmes and PIDs</h2>
      <Programmes list={s.programs} />
      <h2>Outputs</h2>
      <ul class="urls">
        {playbackUrls(s).map((u) => (
          <li key={u.url}>
            <span class="label">{u.label}</span> <a href={u.url}>{u.url}</a>{' '}
            {u.hls ? (
              <button type="button" onClick={() => setPlaying(u.url)} data-testid="play">
                Play
              </button>
            ) : null}
          </li>
        ))}
        {s.outputs.map((o, n) => (
          <li key={`o${n}`}>
            <span class="label">push {n + 1}</span> {String(o['type'] ?? '')}{' '}
            {String(o['state'] ?? '')} {o['message'] ? String(o['message']) : ''}
          </li>
        ))}
      </ul>
      {playing ? <Player src={playing} onClose={() => setPlaying('')} /> : null}
      <h2>Archive</h2>
      <Archive dvr={s.ott?.dvr} />
      <h2>EPG now / next</h2>
      <Guide stream={s.key} />
    </section>
  );
}
