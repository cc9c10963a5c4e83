// Run under the fake DVB device layer (LD_PRELOAD) by test/native/dvb.test.ts: tunes each
// record of argv[2] (JSON) through the native frontend, reads its status, then (when asked)
// reads `dvrBytes` of the adapter's TS and prints one JSON line of what it saw.
import { createHash } from 'node:crypto';
import { tuningOf } from '../../src/dvb/tuning.ts';
import { DvbDvr, DvbFrontend } from '../../src/native/dvb.ts';

interface Job {
  records: Record<string, unknown>[];
  adapter: number;
  dvrBytes: number;
  pids?: number[];
  /** Then the filter's PIDs changed to these (setPids; at least one PID not in `pids`), and
   *  `dvrBytes` more read from the first batch that shows the change. */
  thenPids?: number[];
  /** Close the frontend right after starting the tuning (the close must wait for it). */
  closeDuringTune?: boolean;
}

function pidsOf(data: Buffer): number[] {
  const pids = new Set<number>();
  for (let o = 0; o < data.length; o += 188) pids.add(((data[o + 1]! & 0x1f) << 8) | data[o + 2]!);
  return [...pids].sort((a, b) => a - b);
}

const job = JSON.parse(process.argv[2]!) as Job;
const statuses = [];
for (const rec of job.records) {
  const r = tuningOf({ id: 1, name: 'x', ...rec });
  if (!r.ok) throw new Error(r.problem.message);
  const fe = new DvbFrontend(
    job.adapter,
    (rec['device'] as number | undefined) ?? 0,
    rec['lnb-sharing'] !== true,
  );
  if (job.closeDuringTune) {
    const tuning = fe.tune(r.tuning);
    fe.close();
    fe.close(); // idempotent
    await tuning;
    statuses.push({ closedDuringTune: true });
    continue;
  }
  await fe.tune(r.tuning);
  statuses.push({ ...fe.status(), tuned: fe.tuned() });
  if (job.dvrBytes === 0) fe.close();
  else {
    let chunks: Buffer[] = [];
    let got = 0;
    let pidsThen: number[] | undefined;
    await new Promise<void>((resolve) => {
      let phase = 0;
      const dvr = new DvbDvr({ adapter: job.adapter, pids: job.pids, bufferBlocks: 2 }, (b) => {
        if (phase === 1) {
          // Batches read before the new filter are let pass, up to the first one that holds a
          // PID only the new list has and none it dropped: everything after it was read after
          // the change (the batches come in order).
          const seen = pidsOf(b);
          const added = job.thenPids!.filter((p) => !job.pids?.includes(p));
          if (!seen.some((p) => added.includes(p)) || seen.some((p) => !job.thenPids!.includes(p)))
            return;
          phase = 2;
          got = 0;
          pidsThen = [];
          chunks = [];
        }
        chunks.push(b);
        got += b.length;
        if (got < job.dvrBytes) return;
        if (phase === 0 && job.thenPids) {
          phase = 1;
          dvr.setPids(job.thenPids);
          return;
        }
        if (phase === 2) pidsThen = pidsOf(Buffer.concat(chunks));
        dvr.close();
        dvr.close(); // idempotent
        resolve();
      });
    });
    fe.close();
    const data = Buffer.concat(chunks).subarray(0, job.dvrBytes);
    console.log(
      JSON.stringify({
        statuses,
        bytes: got,
        sha: createHash('sha1').update(data).digest('hex'),
        pids: pidsOf(data),
        ...(pidsThen ? { pidsThen } : {}),
        sync: data.every((v, i) => i % 188 !== 0 || v === 0x47),
      }),
    );
    process.exit(0);
  }
}
console.log(JSON.stringify({ statuses }));
