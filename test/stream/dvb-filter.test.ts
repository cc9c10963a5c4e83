// Per-PID demux filters through the fake layer with a real server: an adapter read only by a
// demuxer of programme 102 moves from the whole TS to the SI PIDs, 102's PMT and its ES; a new
// PMT version with one more stream adds that PID (DMX_ADD_PID); a `dvb` input bound later takes
// the whole TS again.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { SI_PIDS } from '../../src/dvb/pid-filter.ts';
import { fakeDvb } from '../helpers/fake-dvb.ts';
import { startServer, waitFor } from '../helpers/server.ts';
import { nullPacket, packet, pat, pmt, psiPackets } from '../helpers/ts-craft.ts';

const FREQ_KHZ = 602000;
const BITRATE = 2_000_000;

/** Two programmes (PMT 0x100 / 0x200) with their ES; `extra` adds ES 0x202 to 102's PMT v1. */
function mux(file: string, extra: boolean): void {
  const out: Buffer[] = [];
  const cc = new Map<number, number>();
  const es = (pid: number) => {
    const n = cc.get(pid) ?? 0;
    cc.set(pid, n + 1);
    return packet({ pid, cc: n & 15, payload: Buffer.alloc(184, 0xaa) });
  };
  const streams102 = [{ type: 0x1b, pid: 0x201 }, ...(extra ? [{ type: 0x03, pid: 0x202 }] : [])];
  // Continuity counters run on (a repeated counter is a duplicate packet, 13818-1 2.4.3.3).
  const psiCc = [{ n: 0 }, { n: 0 }, { n: 0 }];
  for (let i = 0; i < 20; i++) {
    out.push(
      ...psiPackets(
        0,
        [
          pat([
            { pnr: 101, pid: 0x100 },
            { pnr: 102, pid: 0x200 },
          ]),
        ],
        psiCc[0],
      ),
    );
    out.push(...psiPackets(0x100, [pmt(101, 0x101, [{ type: 0x1b, pid: 0x101 }])], psiCc[1]));
    out.push(...psiPackets(0x200, [pmt(102, 0x201, streams102, extra ? 1 : 0)], psiCc[2]));
    for (let j = 0; j < 20; j++) out.push(es(0x101), es(0x201), es(0x202), nullPacket());
  }
  writeFileSync(file, Buffer.concat(out));
}

interface Filter {
  whole: boolean;
  pids?: number[];
  reason?: string;
}

t.test('per-PID demux filters follow the bound programmes and their PMT', async (t) => {
  const fake = await fakeDvb(t);
  const file = path.join(fake.dir, 'mux.ts');
  mux(file, false);
  fake.setMux([{ system: 3, freq: FREQ_KHZ * 1000, bitrate: BITRATE, file }]);
  const config = (withDvbInput: boolean) => ({
    'dvb-adapter': [{ id: 1, name: 'a', type: 3, freq: FREQ_KHZ, adapter: 0, pause: false }],
    stream: [
      {
        id: 1,
        'stream-name': 'two',
        pause: false,
        'ott-http': 1,
        input: [{ type: 'demuxer', src: 1, 'mpts-id': 1, pnr: 102 }],
      },
      ...(withDvbInput
        ? [
            {
              id: 2,
              'stream-name': 'all',
              pause: false,
              'ott-http': 1,
              input: [{ type: 'dvb', 'adapter-id': 1 }],
            },
          ]
        : []),
    ],
  });
  const srv = await startServer(t, {
    env: fake.env({ FAKE_DVB_DELSYS: '3' }) as Record<string, string>,
    config: config(false),
  });
  const filter = async () =>
    ((await (await fetch(`${srv.url}/data/dvb-adapter/1`)).json()) as { filter?: Filter }).filter;

  await waitFor('per-PID filter for programme 102', async () => {
    const f = await filter();
    return f && !f.whole ? f : undefined;
  }).then((f) => t.same(f.pids, [...SI_PIDS, 0x200, 0x201], 'SI, PMT 0x200, ES and PCR 0x201'));
  const ops = fake
    .entries()
    .filter((e) => e.op === 'DMX_SET_PES_FILTER' || e.op.endsWith('_PID'))
    .map((e) => [e.op, e.pid]);
  t.same(ops[0], ['DMX_SET_PES_FILTER', 8192], 'the whole TS first');
  t.same(
    ops.slice(1),
    [
      ['DMX_SET_PES_FILTER', 0],
      ...[...SI_PIDS.slice(1), 0x200, 0x201].map((p) => ['DMX_ADD_PID', p]),
    ],
    'then the per-PID filter',
  );

  fake.clearLog();
  mux(file, true);
  await waitFor('the PMT change adds 0x202', async () => {
    const f = await filter();
    return f?.pids?.includes(0x202) ? f : undefined;
  });
  t.same(
    fake
      .entries()
      .filter((e) => e.op.endsWith('_PID'))
      .map((e) => [e.op, e.pid]),
    [['DMX_ADD_PID', 0x202]],
    'only the new PID added',
  );

  // A dvb input bound too (the config file is watched): the whole TS again.
  const doc = JSON.parse(readFileSync(srv.configPath!, 'utf8')) as Record<string, unknown>;
  doc['stream'] = config(true).stream;
  writeFileSync(srv.configPath!, JSON.stringify(doc));
  await waitFor('a dvb input: the whole TS', async () => {
    const f = await filter();
    return f?.whole ? f : undefined;
  });
  t.ok(
    fake.entries().some((e) => e.op === 'DMX_SET_PES_FILTER' && e.pid === 8192),
    'DMX_SET_PES_FILTER 8192 again',
  );
});
