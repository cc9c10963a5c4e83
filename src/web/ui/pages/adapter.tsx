// One tuner adapter (GET /data/dvb-adapter/{id}, docs/dvb.md): its status, the streams that read
// it and, for a scanner (mode 1), the transponders and services of the last scan, with a form
// that starts one (admin). Refetched when the events stream says its row changed.
import { useState } from 'preact/hooks';
import { type ApiError, api } from '../api.ts';
import {
  ADAPTER_MODE,
  ADAPTER_STATE_CLASS,
  bytes,
  DELIVERY_SYSTEM,
  figure,
  frequency,
  ratio,
} from '../format.ts';
import { adapters, me } from '../live.ts';
import { href } from '../router.ts';
import { useThrottledReload } from '../throttle.ts';
import { needsAttention, Readers } from './adapters.tsx';

interface Service {
  pnr: number;
  name: string;
  provider: string;
  type: number;
  scrambled: boolean;
  pmtPid: number;
  pids: number[];
}
interface Transponder {
  freq: number;
  state: string;
  message?: string;
  'lnb-polarization'?: number;
  transportStreamId?: number | null;
  originalNetworkId?: number | null;
  networkName?: string | null;
  services?: Service[];
}
interface AdapterStatus {
  key: string;
  id: number;
  name: string;
  state: string;
  message?: string;
  warnings?: string[];
  mode: number;
  type: number;
  adapter: number;
  device: number;
  frontend?: string;
  lock: boolean;
  signal: number | null;
  snr: number | null;
  ber: number | null;
  unc: number | null;
  lockChanges: number;
  retunes?: number;
  bytes: number;
  scan?: { state: string; transponders: Transponder[] };
}

/** Fetch at most this often while the adapter's row keeps changing (signal figures move). */
const REFRESH_MS = 1000;
/** Satellite delivery systems count `freq` in MHz, the others in kHz (spec 1). */
const SATELLITE = new Set([5, 6]);

/** EN 300 468's service types a scan meets most. */
const SERVICE_TYPE: Readonly<Record<number, string>> = {
  1: 'TV',
  2: 'radio',
  10: 'radio (AAC)',
  12: 'data',
  17: 'TV (MPEG-2 HD)',
  22: 'TV (H.264 SD)',
  25: 'TV (H.264 HD)',
  31: 'TV (HEVC)',
};

/** The unit of spec 1's `freq` for a delivery system. */
const freqUnit = (type: number) => (SATELLITE.has(type) ? 'MHz' : 'kHz');
const hex = (n: number) => `${n} (0x${n.toString(16)})`;

function ScanForm({ a, onDone }: { a: AdapterStatus; onDone: () => void }) {
  const [freq, setFreq] = useState('');
  const [error, setError] = useState('');
  const unit = freqUnit(a.type);
  const start = (e: Event) => {
    e.preventDefault();
    setError('');
    api(`/data/dvb-adapter/${encodeURIComponent(a.key)}/scan`, {
      method: 'POST',
      json: { transponders: [{ freq: Number(freq) }] },
    })
      .then(onDone)
      .catch((err: ApiError) => setError(err.message));
  };
  return (
    <form class="form" onSubmit={start} aria-label="Start a scan">
      <label>
        First transponder ({unit})
        <input
          type="number"
          min={1}
          required
          value={freq}
          onInput={(e) => setFreq((e.currentTarget as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" class="primary" disabled={a.scan?.state === 'scanning'}>
        Scan
      </button>
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </form>
  );
}

function Scan({ scan, unit }: { scan: AdapterStatus['scan']; unit: string }) {
  if (!scan) return <p class="muted">No scan yet.</p>;
  return (
    <>
      <p data-testid="scan-state">
        Scan {scan.state}: {scan.transponders.length} transponder
        {scan.transponders.length === 1 ? '' : 's'}
      </p>
      <table class="grid" aria-label="Transponders and services">
        <thead>
          <tr>
            <th>Transponder</th>
            <th>State</th>
            <th>Service</th>
            <th>Provider</th>
            <th>Programme</th>
            <th>Type</th>
            <th>Scrambled</th>
            <th>PMT PID</th>
            <th>PIDs</th>
          </tr>
        </thead>
        <tbody>
          {scan.transponders.map((t) => {
            const services = t.services ?? [];
            const head = (
              <td rowSpan={Math.max(1, services.length)}>
                <strong>
                  {t.freq} {unit}
                </strong>
                {t['lnb-polarization'] !== undefined ? (t['lnb-polarization'] ? ' H' : ' V') : ''}
                {t.transportStreamId != null ? (
                  <small class="muted"> TS {t.transportStreamId}</small>
                ) : null}
                {t.networkName ? <small class="muted"> {t.networkName}</small> : null}
              </td>
            );
            const state = (
              <td rowSpan={Math.max(1, services.length)}>
                <span
                  class={t.state === 'locked' ? 'ok-text' : t.state === 'pending' ? '' : 'bad-text'}
                >
                  {t.state}
                </span>
                {t.message ? <small class="muted"> {t.message}</small> : null}
              </td>
            );
            if (services.length === 0) {
              return (
                <tr key={t.freq} data-transponder={t.freq}>
                  {head}
                  {state}
                  <td colSpan={7} class="muted">
                    {t.state === 'locked' ? 'no services' : ''}
                  </td>
                </tr>
              );
            }
            return services.map((s, i) => (
              <tr key={`${t.freq}:${s.pnr}`} data-transponder={t.freq} data-service={s.name}>
                {i === 0 ? head : null}
                {i === 0 ? state : null}
                <td>{s.name}</td>
                <td>{s.provider}</td>
                <td>{s.pnr}</td>
                <td>{SERVICE_TYPE[s.type] ?? `0x${s.type.toString(16)}`}</td>
                <td class={s.scrambled ? 'warn-text' : ''}>{s.scrambled ? 'yes' : 'no'}</td>
                <td>{hex(s.pmtPid)}</td>
                <td>{s.pids.join(', ')}</td>
              </tr>
            ));
          })}
        </tbody>
      </table>
    </>
  );
}

export function AdapterPage({ id }: { id: string }) {
  const [a, setA] = useState<AdapterStatus | null>(null);
  const [error, setError] = useState('');
  const load = () =>
    api<AdapterStatus>(`/data/dvb-adapter/${encodeURIComponent(id)}`)
      .then((r) => {
        setA(r.body);
        setError('');
      })
      .catch((e: ApiError) => setError(e.message));

  const row = adapters.value.get(id);
  useThrottledReload(row, load, REFRESH_MS);

  if (error && !a) {
    return (
      <section class="page">
        <p class="error" role="alert">
          {error}
        </p>
        <a href={href('adapters')}>Back to adapters</a>
      </section>
    );
  }
  if (!a) return <section class="page">Loading…</section>;
  const bad = needsAttention(a);
  const admin = me.value?.role === 'admin';
  return (
    <section class="page" aria-labelledby="adapter-h">
      <div class="toolbar">
        <a href={href('adapters')}>← Adapters</a>
        <h1 id="adapter-h">{a.name}</h1>
        <span class={`badge ${ADAPTER_STATE_CLASS[a.state] ?? 'muted'}`} data-testid="state">
          {a.state}
        </span>
        {a.message ? <span class="muted">{a.message}</span> : null}
      </div>
      {bad ? (
        <p class="attention-note" role="alert">
          {a.state === 'error' ? 'The adapter failed' : 'The adapter has no lock'}
          {a.message ? `: ${a.message}` : ''}. The streams that read it fail over.
        </p>
      ) : null}
      {a.warnings?.length ? (
        <ul class="alerts">
          {a.warnings.map((w) => (
            <li key={w} class="sev-warning">
              {w}
            </li>
          ))}
        </ul>
      ) : null}
      <h2>Status</h2>
      <dl class="kv" data-testid="status">
        {[
          ['System', DELIVERY_SYSTEM[a.type] ?? `type ${a.type}`],
          ['Mode', ADAPTER_MODE[a.mode] ?? String(a.mode)],
          ['Device', a.adapter < 0 ? 'unassigned' : `adapter${a.adapter}/frontend${a.device}`],
          ['Frontend', a.frontend ?? '—'],
          ['Lock', a.lock ? 'yes' : 'no'],
          ['Signal', figure(a.signal, 'dBm')],
          ['SNR', figure(a.snr, 'dB')],
          ['BER', ratio(a.ber)],
          ['UNC', a.unc === null ? '—' : String(a.unc)],
          ['Frequency', frequency(row?.frequency ?? null, row?.intermediate)],
          ['Lock changes', String(a.lockChanges)],
          ...(a.retunes !== undefined ? [['Re-tunes', String(a.retunes)]] : []),
          ['Received', bytes(a.bytes)],
        ].map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <h2>Streams</h2>
      <p data-testid="readers">
        <Readers keys={row?.streams ?? []} />
      </p>
      {a.mode === 1 ? (
        <>
          <h2>Scan</h2>
          {admin ? <ScanForm a={a} onDone={() => void load()} /> : null}
          <Scan scan={a.scan} unit={freqUnit(a.type)} />
        </>
      ) : null}
    </section>
  );
}
