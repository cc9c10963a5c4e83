// Tuner adapters (docs/dvb.md): one row per adapter from the events stream (state, lock, signal,
// SNR, BER, UNC, frequency, the streams that read it), live like the streams list. An adapter
// without lock or in error is marked and counted at the top.
import {
  ADAPTER_MODE,
  ADAPTER_STATE_CLASS,
  DELIVERY_SYSTEM,
  figure,
  frequency,
  ratio,
  STATE_CLASS,
} from '../format.ts';
import { type AdapterRow, adapters, loaded, rows, version } from '../live.ts';
import { href } from '../router.ts';

/** An adapter that should be on a signal and is not: the page and the navigation mark it. */
export function needsAttention(a: Pick<AdapterRow, 'state'>): boolean {
  return a.state === 'no lock' || a.state === 'error';
}

/** The streams that read an adapter, as links with their live state. */
export function Readers({ keys }: { keys: string[] }) {
  void version.value;
  if (keys.length === 0) return <span class="muted">none</span>;
  return (
    <>
      {keys.map((k, i) => {
        const s = rows.get(k);
        return (
          <span key={k}>
            {i > 0 ? ', ' : ''}
            <a href={href('stream', k)} data-reader={s?.name ?? k}>
              {s ? s.title || s.name : k}
            </a>
            {s && s.state !== 'running' ? (
              <small class={STATE_CLASS[s.state] ?? 'muted'}> {s.state}</small>
            ) : null}
          </span>
        );
      })}
    </>
  );
}

/** Where a new adapter comes from: a `dvb-adapter` record. */
function Empty() {
  return (
    <div class="empty" data-testid="adapters-empty">
      <p>No tuner adapter is configured.</p>
      <p class="muted">
        Add a <code>dvb-adapter</code> record to the config (on the Config page, or{' '}
        <code>POST /config/dvb-adapter</code>): <code>id</code>, <code>name</code>, the delivery
        system <code>type</code>, the device's <code>adapter</code> and <code>device</code>
        numbers, a <code>mode</code> (0 stream, 1 scanner, 2 monitor) and, to tune, the transponder
        (<code>freq</code> and the members of its system). docs/dvb.md lists them.
      </p>
    </div>
  );
}

export function AdaptersPage() {
  const list = [...adapters.value.values()];
  const bad = list.filter(needsAttention);
  return (
    <section class="page" aria-labelledby="ad-h">
      <div class="toolbar">
        <h1 id="ad-h">Tuner adapters</h1>
        <span class="count" aria-live="polite" data-count={list.length}>
          {loaded.value ? `${list.length} adapter${list.length === 1 ? '' : 's'}` : 'loading…'}
        </span>
        {bad.length ? (
          <span class="badge bad" data-testid="attention">
            {bad.length} without lock or failed
          </span>
        ) : null}
      </div>
      {loaded.value && list.length === 0 ? <Empty /> : null}
      {list.length ? (
        <table class="grid adapters" aria-label="Tuner adapters">
          <thead>
            <tr>
              <th>Adapter</th>
              <th>System</th>
              <th>Mode</th>
              <th>State</th>
              <th>Lock</th>
              <th>Signal</th>
              <th>SNR</th>
              <th>BER</th>
              <th>UNC</th>
              <th>Frequency</th>
              <th>Streams</th>
            </tr>
          </thead>
          <tbody>
            {list.map((a) => (
              <tr
                key={a.key}
                data-adapter={a.name}
                data-state={a.state}
                class={needsAttention(a) ? 'attention' : ''}
              >
                <td>
                  <a href={href('adapter', a.key)}>
                    <strong>{a.name}</strong>
                  </a>{' '}
                  <small class="muted">#{a.id}</small>
                </td>
                <td>{DELIVERY_SYSTEM[a.type] ?? `type ${a.type}`}</td>
                <td>{ADAPTER_MODE[a.mode] ?? a.mode}</td>
                <td>
                  <span class={`badge ${ADAPTER_STATE_CLASS[a.state] ?? 'muted'}`}>{a.state}</span>
                  {a.message ? <small class="muted"> {a.message}</small> : null}
                </td>
                <td data-testid="lock" class={a.lock ? 'ok-text' : a.mode === 1 ? '' : 'bad-text'}>
                  {a.lock ? 'yes' : 'no'}
                </td>
                <td data-testid="signal">{figure(a.signal, 'dBm')}</td>
                <td data-testid="snr">{figure(a.snr, 'dB')}</td>
                <td data-testid="ber">{ratio(a.ber)}</td>
                <td data-testid="unc" class={a.unc ? 'warn-text' : ''}>
                  {a.unc ?? '—'}
                </td>
                <td>{frequency(a.frequency, a.intermediate)}</td>
                <td>
                  <Readers keys={a.streams} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
