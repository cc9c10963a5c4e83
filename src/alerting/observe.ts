// One sweep's faults from the sources. Stream faults come from each stream's own alert gate
// (enable-alert, alert-delay), the alerter's rate rules reported into it first; storage, EPG
// and adapter faults go through the alerter's gate (delay-sec). Both gates are the engine's
// AlertGate: one flap damping for every alert.
import type { Logger } from 'pino';
import { AlertGate } from '../engine/alerts.ts';
import type { Clock } from '../util/clock.ts';
import { CC_KEY, ErrorRateWindow, P1_KEY, RULES, streamRule } from './rules.ts';
import type { AlertSources, StreamView } from './sources.ts';
import type { AlerterSettings, Fault, RuleId, SubjectKind } from './types.ts';

export class FaultObserver {
  private readonly windows = new Map<string, ErrorRateWindow>();
  /** The gate of subjects without one of their own. Quiet: the alerter logs the alerts. */
  private readonly gate: AlertGate;
  /** Per key of the gate: what the fault is about (the gate keeps key and message only). */
  private readonly meta = new Map<string, { rule: RuleId; kind: SubjectKind; subject: string }>();

  constructor(
    private readonly clock: Clock,
    log: Logger,
    private readonly sources: AlertSources,
  ) {
    this.gate = new AlertGate(clock, log.child({}, { level: 'silent' }));
  }

  observe(s: AlerterSettings): Fault[] {
    this.gate.delayMs = s.delayMs;
    return [...this.streamFaults(s), ...this.gatedFaults()];
  }

  /** Take the alerter's reports out of every stream's gate (the alerter is off or closed). */
  withdraw(): void {
    for (const st of this.sources.streams()) {
      if (!st.running) continue;
      st.report(P1_KEY, false, '');
      st.report(CC_KEY, false, '');
    }
    this.windows.clear();
    this.gate.clear();
    this.meta.clear();
  }

  private streamFaults(s: AlerterSettings): Fault[] {
    const out: Fault[] = [];
    const seen = new Set<string>();
    const mono = this.clock.monotonic();
    for (const st of this.sources.streams()) {
      if (!st.running) continue;
      seen.add(st.name);
      this.reportRates(st, s, mono);
      for (const a of st.alerts()) {
        const rule = streamRule(a.key);
        if (!rule) continue;
        out.push({
          rule,
          kind: 'stream',
          subject: st.name,
          key: `stream:${st.name}/${a.key}`,
          message: a.message,
          since: Date.parse(a.since),
          raised: a.raised,
        });
      }
    }
    for (const name of this.windows.keys()) if (!seen.has(name)) this.windows.delete(name);
    return out;
  }

  private reportRates(st: StreamView, s: AlerterSettings, mono: number): void {
    const name = st.name;
    const totals = st.errorTotals();
    let w = this.windows.get(name);
    if (!totals) {
      this.windows.delete(name);
      st.report(P1_KEY, false, '');
      st.report(CC_KEY, false, '');
      return;
    }
    if (!w) {
      w = new ErrorRateWindow();
      this.windows.set(name, w);
    }
    w.add(mono, totals, s.errorWindowMs);
    const r = w.rates(s.errorWindowMs);
    const win = `${s.errorWindowMs / 1000} s`;
    st.report(
      P1_KEY,
      s.p1Rate > 0 && r.p1 >= s.p1Rate,
      `stream ${name}: TR 101 290 priority-1 errors ${r.p1.toFixed(1)}/s over ${win} on input ${totals.input}`,
    );
    st.report(
      CC_KEY,
      s.ccRate > 0 && r.cc >= s.ccRate,
      `stream ${name}: continuity errors ${r.cc.toFixed(2)}/s over ${win} on input ${totals.input}`,
    );
  }

  /** Storages, EPG sources and adapters through the alerter's own gate. */
  private gatedFaults(): Fault[] {
    const now = new Map<
      string,
      { rule: RuleId; kind: SubjectKind; subject: string; msg: string }
    >();
    const add = (rule: RuleId, subject: string, detail: string, msg: string) =>
      now.set(`${RULES[rule].kind}:${subject}/${detail}`, {
        rule,
        kind: RULES[rule].kind,
        subject,
        msg,
      });
    for (const d of this.sources.storages()) {
      if (d.state === 'error')
        add('storage-error', d.name, 'error', `storage ${d.name}: ${d.message}`);
      if (d.diskFull)
        add('disk-full', d.name, 'disk-full', `storage ${d.name}: disk ${d.usedPercent}% used`);
      if (d.emergency)
        add(
          'storage-emergency',
          d.name,
          'emergency',
          `storage ${d.name}: ${d.freeBytes} bytes free, below disk-emergency-bytes`,
        );
    }
    for (const e of this.sources.epgSources()) {
      if (e.state === 'error')
        add(
          'epg-import',
          e.name,
          'import',
          `EPG source ${e.name}: import failed: ${e.lastError ?? ''}`,
        );
    }
    for (const a of this.sources.adapters()) {
      if (a.enableAlert && !a.locked)
        add(
          'adapter-lock',
          a.name,
          'lock',
          `adapter ${a.name}: no lock${a.message ? ` (${a.message})` : ''}`,
        );
    }
    for (const a of this.gate.list()) {
      if (!now.has(a.key)) {
        this.gate.set(a.key, false);
        this.meta.delete(a.key);
      }
    }
    for (const [key, f] of now) {
      this.gate.set(key, true, f.msg);
      this.meta.set(key, { rule: f.rule, kind: f.kind, subject: f.subject });
    }
    return this.gate.list().flatMap((a) => {
      const m = this.meta.get(a.key);
      if (!m) return [];
      return [
        { ...m, key: a.key, message: a.message, since: Date.parse(a.since), raised: a.raised },
      ];
    });
  }
}
