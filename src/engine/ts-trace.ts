// `mpegts-trace` (a stream's inputs, a tuner adapter's TS): what the TS analysis finds, logged
// at `info` as it changes — the programme table when it appears or changes, and how much each
// error counter grew since the last sample. Quiet while nothing changes. docs/stream.md.
import type { Logger } from 'pino';
import type { Program, TsStats } from '../native/ts.ts';

export class TsTrace {
  private last: { stats: TsStats; programs: string } | null = null;

  /** `fields` go on every line (the input's index, …). */
  constructor(
    private readonly log: Logger,
    private readonly fields: Record<string, unknown> = {},
  ) {}

  /** Start again: the next sample logs the table as a start. */
  reset(): void {
    this.last = null;
  }

  sample(st: TsStats, programs: Program[]): void {
    const table = JSON.stringify(
      programs.map((p) => ({
        pnr: p.pnr,
        pmt: p.pmtPid,
        pcr: p.pcrPid,
        version: p.version,
        name: p.name,
        streams: p.streams.map((s) => `${s.pid}:${s.codec}`),
      })),
    );
    const was = this.last;
    this.last = { stats: st, programs: table };
    if (!was || was.programs !== table)
      this.log.info(
        { ...this.fields, programs: JSON.parse(table) },
        was ? 'mpegts: programme table changed' : 'mpegts: analysis started',
      );
    if (!was) return;
    const grew: Record<string, number> = {};
    const add = (key: string, now: number, before: number) => {
      if (now > before) grew[key] = now - before;
    };
    add('syncLosses', st.syncLosses, was.stats.syncLosses);
    add('junkBytes', st.junkBytes, was.stats.junkBytes);
    add('crcErrors', st.crcErrors, was.stats.crcErrors);
    add('sectionsDropped', st.sectionsDropped, was.stats.sectionsDropped);
    const t0 = was.stats.tr101290 as unknown as Record<string, number>;
    const t1 = st.tr101290 as unknown as Record<string, number>;
    for (const k of Object.keys(t1)) if (typeof t1[k] === 'number') add(k, t1[k]!, t0[k] ?? 0);
    if (Object.keys(grew).length > 0) this.log.info({ ...this.fields, grew }, 'mpegts: errors');
  }
}
