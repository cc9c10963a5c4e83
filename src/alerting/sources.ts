// What the alerter watches, as narrow views the driver (src/drivers/alerter.ts) builds from the
// running streams, storages and EPG sources, so the alerter knows none of them and tests can
// hand it fakes.
import type { ErrorTotals } from './rules.ts';

/** One fault held by a stream's alert gate (src/engine/alerts.ts `Alert`). */
export interface GateAlert {
  key: string;
  message: string;
  /** ISO time the fault was first seen. */
  since: string;
  raised: boolean;
}

export interface StreamView {
  name: string;
  /** Started (not paused): a stopped stream has no faults and takes no reports. */
  running: boolean;
  /** Every fault of the stream's gate, raised or not; empty when its enable-alert is off. */
  alerts(): readonly GateAlert[];
  /** Cumulative counters of the active input, null with no active input. */
  errorTotals(): ErrorTotals | null;
  /** Put a fault the alerter found through the stream's gate (its alert-delay applies). */
  report(key: string, present: boolean, message: string): void;
}

export interface StorageView {
  name: string;
  /** `ready`, `error` or `not-ready`. */
  state: string;
  message: string;
  /** The disk-full alarm (usage above max-usage, with its hysteresis). */
  diskFull: boolean;
  usedPercent: number;
  /** Free space below disk-emergency-bytes. */
  emergency: boolean;
  freeBytes: number;
}

export interface EpgSourceView {
  id: number;
  name: string;
  /** `error` after a failed import until the next one succeeds. */
  state: string;
  lastError?: string;
}

/** A tuner adapter as the alerter sees it (the dvb-adapter driver gives these): `adapter-lock`. */
export interface AdapterView {
  name: string;
  /** The adapter's enable-alert. */
  enableAlert: boolean;
  locked: boolean;
  message: string;
}

export interface AlertSources {
  streams(): readonly StreamView[];
  storages(): readonly StorageView[];
  epgSources(): readonly EpgSourceView[];
  adapters(): readonly AdapterView[];
}
