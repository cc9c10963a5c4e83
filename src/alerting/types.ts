// The alerter's vocabulary: severities, the rule ids, a fault as observed, an active alert and
// the raise / repeat / clear events the sinks receive (docs/alerting.md).

export type Severity = 'info' | 'warning' | 'critical';

const RANK: Readonly<Record<Severity, number>> = { info: 0, warning: 1, critical: 2 };

/** True when `s` is at least `min`. */
export function atLeast(s: Severity, min: Severity): boolean {
  return RANK[s] >= RANK[min];
}

/** The closed set of rules (src/alerting/rules.ts gives each its severity and subject). */
export type RuleId =
  | 'stream-down'
  | 'failover'
  | 'input-fault'
  | 'tr101290-p1'
  | 'cc-errors'
  | 'scrambled'
  | 'storage-error'
  | 'disk-full'
  | 'storage-emergency'
  | 'epg-import'
  | 'adapter-lock';

/** What an alert is about: a stream by name, a storage, an EPG source, a tuner adapter. */
export type SubjectKind = 'stream' | 'storage' | 'epg-source' | 'adapter';

/** A fault seen in one sweep. `raised` comes from the flap damping (an AlertGate: the stream's
 *  own with its alert-delay, or the alerter's with delay-sec); a fault not raised yet still
 *  holds an alert that is already active (hysteresis). */
export interface Fault {
  rule: RuleId;
  kind: SubjectKind;
  subject: string;
  /** Unique per alert: `stream:news/no-signal`. */
  key: string;
  message: string;
  /** Wall-clock ms the fault was first seen. */
  since: number;
  raised: boolean;
}

export interface ActiveAlert {
  id: string;
  rule: RuleId;
  severity: Severity;
  kind: SubjectKind;
  subject: string;
  key: string;
  message: string;
  /** ISO times: fault first seen, alert raised. */
  since: string;
  raisedAt: string;
}

export type AlertEventType = 'raise' | 'repeat' | 'clear';

/** One event as every sink gets it (the webhook's JSON body, the feed's data, a history row). */
export interface AlertEvent extends ActiveAlert {
  event: AlertEventType;
  /** Increases by one per event of this server process. */
  seq: number;
  /** ISO time of the event. */
  at: string;
  /** The server's name (host name). */
  server: string;
  /** A clear: why (`fault gone`, `alerter disabled`, `rule off`). */
  reason?: string;
}

/** The alerter's settings in its own units (src/drivers/alerter.ts reads the record). */
export interface AlerterSettings {
  enable: boolean;
  webhookUrl: string;
  minSeverity: Severity;
  repeatMs: number;
  clearMs: number;
  delayMs: number;
  p1Rate: number;
  ccRate: number;
  errorWindowMs: number;
  historySize: number;
  webhookTimeoutMs: number;
  webhookRetries: number;
  webhookQueueSize: number;
}
