// Prometheus metrics of the tuner adapters, read from the running instances at scrape time.
import { Counter, Gauge } from 'prom-client';
import type { Services } from '../../util/services.ts';
import { metricsRegistry } from '../stream/metrics.ts';
import type { DvbAdapterInstance } from './instance.ts';
import { dvbAdapterRegistry } from './registry.ts';

const done = new WeakSet<object>();

export function ensureDvbMetrics(services: Services): void {
  const reg = metricsRegistry(services);
  if (done.has(reg)) return;
  done.add(reg);
  const each = (
    m: Gauge<'adapter'> | Counter<'adapter'>,
    pick: (s: Record<string, unknown>) => unknown,
  ) => {
    m.reset();
    for (const a of dvbAdapterRegistry(services).all() as DvbAdapterInstance[]) {
      const v = pick(a.status());
      if (typeof v !== 'number') continue;
      if (m instanceof Gauge) m.set({ adapter: a.name }, v);
      else m.inc({ adapter: a.name }, v);
    }
  };
  const gauge = (name: string, help: string, pick: (s: Record<string, unknown>) => unknown) =>
    new Gauge({
      name,
      help,
      labelNames: ['adapter'],
      registers: [reg],
      collect() {
        each(this, pick);
      },
    });
  const counter = (name: string, help: string, pick: (s: Record<string, unknown>) => unknown) =>
    new Counter({
      name,
      help,
      labelNames: ['adapter'],
      registers: [reg],
      collect() {
        each(this, pick);
      },
    });
  gauge('sluice_dvb_lock', 'Tuner adapter frontend lock (1 locked)', (s) => (s['lock'] ? 1 : 0));
  gauge('sluice_dvb_signal_dbm', 'Tuner adapter signal strength, dBm', (s) => s['signal']);
  gauge('sluice_dvb_snr_db', 'Tuner adapter carrier-to-noise ratio, dB', (s) => s['snr']);
  gauge(
    'sluice_dvb_ber',
    'Tuner adapter bit error ratio before FEC, over the last poll',
    (s) => s['ber'],
  );
  counter(
    'sluice_dvb_uncorrected_blocks_total',
    'Tuner adapter uncorrected blocks',
    (s) => s['unc'],
  );
  counter(
    'sluice_dvb_lock_changes_total',
    'Tuner adapter lock losses and returns',
    (s) => s['lockChanges'],
  );
  counter(
    'sluice_dvb_retunes_total',
    'Tuner adapter re-tunes after a lost lock',
    (s) => s['retunes'],
  );
  const cam = (s: Record<string, unknown>) => s['cam'] as Record<string, unknown> | undefined;
  gauge(
    'sluice_dvb_cam_ready',
    'Tuner adapter CAM ready (1) or not (0); absent without cam-pnr',
    (s) => (cam(s) ? (cam(s)!['state'] === 'ready' ? 1 : 0) : undefined),
  );
  gauge(
    'sluice_dvb_cam_descrambling',
    'Tuner adapter cam-pnr programmes the CAM says it descrambles',
    (s) =>
      cam(s)
        ? (cam(s)!['programmes'] as { state: string }[]).filter((p) => p.state === 'descrambling')
            .length
        : undefined,
  );
  counter('sluice_dvb_cam_resets_total', 'Tuner adapter CAM resets', (s) => cam(s)?.['resets']);
  counter(
    'sluice_dvb_received_bytes_total',
    'Tuner adapter transport stream bytes read from dvr',
    (s) => s['bytes'],
  );
}
