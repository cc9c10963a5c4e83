// A tuner adapter's verbose logs through the fake layer with a real server: `trace` writes the
// tuning it sends and the frontend status as it changes, `mpegts-trace` the programme table of
// the adapter's TS (src/engine/ts-trace.ts, as a stream's inputs do).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { fakeDvb } from '../helpers/fake-dvb.ts';
import { startServer, waitFor } from '../helpers/server.ts';
import { nullPacket, packet, pat, pmt, psiPackets } from '../helpers/ts-craft.ts';

const FREQ_KHZ = 602000;

function mux(file: string): void {
  const out: Buffer[] = [];
  const cc = [{ n: 0 }, { n: 0 }];
  let es = 0;
  for (let i = 0; i < 20; i++) {
    out.push(...psiPackets(0, [pat([{ pnr: 101, pid: 0x100 }])], cc[0]));
    out.push(...psiPackets(0x100, [pmt(101, 0x101, [{ type: 0x1b, pid: 0x101 }])], cc[1]));
    for (let j = 0; j < 20; j++)
      out.push(
        packet({ pid: 0x101, cc: es++ & 15, payload: Buffer.alloc(184, 0xaa) }),
        nullPacket(),
      );
  }
  writeFileSync(file, Buffer.concat(out));
}

interface Line {
  msg: string;
  adapter?: number;
  programs?: { pnr: number; streams: string[] }[];
}

t.test('trace and mpegts-trace of a tuner adapter', async (t) => {
  const fake = await fakeDvb(t);
  const file = path.join(fake.dir, 'mux.ts');
  mux(file);
  fake.setMux([{ system: 3, freq: FREQ_KHZ * 1000, bitrate: 2_000_000, file }]);
  const srv = await startServer(t, {
    env: {
      ...(fake.env({ FAKE_DVB_DELSYS: '3' }) as Record<string, string>),
      SLUICE_LOG_LEVEL: 'info',
    },
    config: {
      'dvb-adapter': [
        {
          id: 1,
          name: 'a',
          type: 3,
          freq: FREQ_KHZ,
          adapter: 0,
          pause: false,
          trace: true,
          'mpegts-trace': true,
        },
      ],
    },
  });
  const lines = () =>
    srv
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.adapter === 1);
  const seen = await waitFor(
    'the trace lines',
    () => {
      const all = lines();
      const table = all.find((l) => (l.programs?.length ?? 0) > 0);
      return all.some((l) => l.msg === 'tuning') &&
        all.some((l) => l.msg === 'frontend status') &&
        table
        ? { all, table }
        : undefined;
    },
    30_000,
  );
  t.ok(
    seen.all.some((l) => l.msg === 'mpegts: analysis started'),
    'the analysis start',
  );
  t.same(seen.table.programs?.[0]?.pnr, 101, 'the programme table');
  t.same(seen.table.programs?.[0]?.streams, ['257:h264']);
});
