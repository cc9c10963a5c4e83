// native/dvb through the fake device layer: the property lists and LNB steps the native
// frontend sends equal src/dvb/tuning.ts's (themselves equal to libdvbv5's, test/dvb/
// libdvbv5.test.ts); the frontend reports lock, signal, C/N and error counters as the layer
// gives them; the demux and dvr deliver the tuned transponder's TS, whole or per PID (a changed
// PID list by DMX_ADD_PID / DMX_REMOVE_PID); the kernel
// header's numbers equal src/dvb/api.ts's.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import * as api from '../../src/dvb/api.ts';
import { tuningOf } from '../../src/dvb/tuning.ts';
import { dvbConstants } from '../../src/native/dvb.ts';
import { CASES, recordedTuning } from '../helpers/dvb-cases.ts';
import { type FakeDvb, type FakeEntry, fakeDvb } from '../helpers/fake-dvb.ts';
import { REPO_ROOT } from '../helpers/server.ts';

const CHILD = path.join(REPO_ROOT, 'test/helpers/dvb-child.ts');
const CHILD_TIMEOUT_MS = 30_000;

async function child(
  fake: FakeDvb,
  job: object,
  delsys: number[],
): Promise<Record<string, unknown>> {
  const c = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(job)], {
    env: fake.env({ FAKE_DVB_DELSYS: delsys.join(',') }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  c.stdout.on('data', (d: Buffer) => (out += d));
  c.stderr.on('data', (d: Buffer) => (err += d));
  const timer = setTimeout(() => c.kill('SIGKILL'), CHILD_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => c.on('exit', resolve));
  clearTimeout(timer);
  if (code !== 0) throw new Error(`child exited ${code}: ${err}`);
  return JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
}

/** The log cut at each frontend open, one piece per tuning. */
function perOpen(entries: FakeEntry[]): FakeEntry[][] {
  const out: FakeEntry[][] = [];
  for (const e of entries) {
    if (e.op === 'open' && /frontend/.test(e.path ?? '')) out.push([]);
    out.at(-1)?.push(e);
  }
  return out;
}

t.test('the kernel header numbers equal src/dvb/api.ts', async (t) => {
  const c = dvbConstants();
  t.same(c.DTV, api.DTV);
  t.same(c.SYS, api.SYS);
  const { DTV: _d, SYS: _s, ...other } = api;
  t.same(c.other, other);
});

t.test('native tuning sends what src/dvb/tuning.ts computes, for every case', async (t) => {
  const fake = await fakeDvb(t);
  // One child per frontend family (its delivery systems differ).
  const families = new Map<string, typeof CASES>();
  for (const c of CASES)
    families.set(c.delsys.join(','), [...(families.get(c.delsys.join(',')) ?? []), c]);
  for (const [delsys, cases] of families) {
    fake.clearLog();
    await child(
      fake,
      { records: cases.map((c) => c.rec), adapter: 0, dvrBytes: 0 },
      delsys.split(',').map(Number),
    );
    const tunings = perOpen(fake.entries());
    t.equal(tunings.length, cases.length, `${delsys}: one frontend open per case`);
    cases.forEach((c, i) => {
      const ours = tuningOf({ id: 1, name: 'x', ...c.rec });
      const sent = recordedTuning(tunings[i]!);
      t.same(sent, ours.ok && { sec: ours.tuning.sec, props: ours.tuning.props }, c.name);
      const first = tunings[i]!.find((e) => e.op === 'FE_SET_PROPERTY');
      // The frontend stays in the system of the case before (its first system at the start).
      const current = i === 0 ? Number(delsys.split(',')[0]) : cases[i - 1]!.rec['type'];
      const switched = current !== c.rec['type'];
      t.same(
        first?.props,
        switched ? [[api.DTV.DELIVERY_SYSTEM, c.rec['type']]] : sent?.props,
        `${c.name}: delivery system first when the frontend is in another`,
      );
      const last = tunings[i]!.at(-1)!;
      t.equal(last.op, 'close');
    });
  }
});

t.test('status, and the TS of the tuned transponder from dvr (whole TS and per PID)', async (t) => {
  const fake = await fakeDvb(t);
  const ts = path.join(fake.dir, 'mux.ts');
  // 2000 packets: PIDs 0x100 + n % 4, each numbered in its payload.
  const pkts = Array.from({ length: 2000 }, (_, n) => {
    const p = Buffer.alloc(188, 0xff);
    p[0] = 0x47;
    const pid = 0x100 + (n % 4);
    p[1] = pid >> 8;
    p[2] = pid & 0xff;
    p[3] = 0x10 | (n & 0xf);
    p.writeUInt32BE(n, 4);
    return p;
  });
  writeFileSync(ts, Buffer.concat(pkts));
  const rec = { type: 3, freq: 602000 };
  fake.setMux([{ system: 3, freq: 602000000, bitrate: 8_000_000, file: ts }]);
  fake.setControl({ cnr: 23400, signal: -51500, ber: 17, bits: 5000000, unc: 3 });
  const whole = await child(fake, { records: [rec], adapter: 0, dvrBytes: 188 * 1000 }, [3, 16]);
  const st = (whole['statuses'] as Record<string, unknown>[])[0]!;
  t.match(st, {
    lock: true,
    status: 0x1f,
    signal: -51.5,
    cnr: 23.4,
    preErrorBits: 17,
    preTotalBits: 5000000,
    errorBlocks: 3,
  });
  t.same(st['tuned'], { system: 3, frequency: 602000000 }, 'the tuning read back');
  t.equal(whole['sync'], true, 'whole packets');
  t.same(whole['pids'], [0x100, 0x101, 0x102, 0x103]);
  const expect = (await import('node:crypto'))
    .createHash('sha1')
    .update(Buffer.concat(pkts.slice(0, 1000)))
    .digest('hex');
  t.equal(whole['sha'], expect, 'the file, in order');
  const log = fake.entries();
  t.match(
    log.find((e) => e.op === 'DMX_SET_PES_FILTER'),
    { pid: 8192, input: 0, output: 2, flags: 4 },
  );
  t.match(
    log.find((e) => e.op === 'DMX_SET_BUFFER_SIZE'),
    { v: 2 * 65536 },
  );

  fake.clearLog();
  const some = await child(
    fake,
    { records: [rec], adapter: 0, dvrBytes: 188 * 100, pids: [0x101, 0x103] },
    [3, 16],
  );
  t.same(some['pids'], [0x101, 0x103], 'only the filtered PIDs');
  t.match(
    fake.entries().filter((e) => e.op.startsWith('DMX_SET_PES') || e.op === 'DMX_ADD_PID'),
    [
      { op: 'DMX_SET_PES_FILTER', pid: 0x101 },
      { op: 'DMX_ADD_PID', pid: 0x103 },
    ],
  );

  fake.clearLog();
  const changed = await child(
    fake,
    {
      records: [rec],
      adapter: 0,
      dvrBytes: 188 * 100,
      pids: [0x101, 0x103],
      thenPids: [0x100, 0x101],
    },
    [3, 16],
  );
  t.same(changed['pidsThen'], [0x100, 0x101], 'setPids: only the new PIDs after the change');
  t.match(
    fake.entries().filter((e) => e.op.startsWith('DMX_SET_PES') || e.op.endsWith('_PID')),
    [
      { op: 'DMX_SET_PES_FILTER', pid: 0x101 },
      { op: 'DMX_ADD_PID', pid: 0x103 },
      { op: 'DMX_REMOVE_PID', pid: 0x103 },
      { op: 'DMX_ADD_PID', pid: 0x100 },
    ],
    'the difference only: 0x103 removed, 0x100 added, 0x101 untouched',
  );

  fake.setControl({ lock: 0 });
  const lost = await child(fake, { records: [rec], adapter: 0, dvrBytes: 0 }, [3, 16]);
  t.match((lost['statuses'] as unknown[])[0], { lock: false, status: 0, cnr: null });
  fake.setMux([]);
  fake.setControl({});
  const wrong = await child(fake, { records: [rec], adapter: 0, dvrBytes: 0 }, [3, 16]);
  t.match((wrong['statuses'] as unknown[])[0], { lock: false }, 'no transponder there: no lock');
});

t.test('close during a tuning waits for it, then powers the LNB down', async (t) => {
  const fake = await fakeDvb(t);
  const rec = CASES.find((c) => c.name.startsWith('DiSEqC port 1'))!.rec;
  await child(fake, { records: [rec], adapter: 0, dvrBytes: 0, closeDuringTune: true }, [6, 5]);
  const ops = fake.entries().map((e) => (e.op === 'FE_SET_VOLTAGE' ? `voltage ${e.v}` : e.op));
  const tuneAt = ops.lastIndexOf('FE_SET_PROPERTY');
  t.ok(tuneAt > 0, 'the tuning was sent whole');
  t.same(ops.slice(tuneAt + 1), ['voltage 2', 'close'], 'then the LNB off and the close, once');
});

t.test('a missing adapter is ENOENT', async (t) => {
  const fake = await fakeDvb(t);
  await t.rejects(
    child(fake, { records: [{ type: 3, freq: 602000, device: 1 }], adapter: 0, dvrBytes: 0 }, [3]),
    /ENOENT/,
  );
});
