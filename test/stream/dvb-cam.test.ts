// The CAM of a tuner adapter end to end through the fake layer's scripted CI CAM (test/fake-dvb/
// fake-ca.c): a real server with `cam-pnr` [101, 102] on a multiplex whose PMTs carry CA
// descriptors; the CAM answers slowly (ready 1 s after reset, each answer 50 ms late) and refuses
// 102. /data/dvb-adapter/1 shows it ready with its application information and CA system ids,
// 101 descrambling and 102 refused; the module saw a query and ok_descrambling for each, and
// the date. Absent at start, pulled out, and resetting itself: the adapter initialises it again.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { fakeDvb } from '../helpers/fake-dvb.ts';
import { startServer, waitFor } from '../helpers/server.ts';
import { nullPacket, pat, pmt, psiPackets } from '../helpers/ts-craft.ts';

const FREQ_KHZ = 602000;
const CA = Buffer.from([0x09, 0x04, 0x0b, 0x00, 0xe6, 0x00]); // CA_system_id 0x0b00, ECM PID 0x600
const BITRATE = 2_000_000;

/** PAT, two PMTs with stream-level CA descriptors, then padding; the fake plays it in a loop. */
function caMux(file: string): void {
  const packets: Buffer[] = [];
  // Continuity counters run on (a repeated counter is a duplicate packet, 13818-1 2.4.3.3).
  const psiCc = [{ n: 0 }, { n: 0 }, { n: 0 }];
  for (let i = 0; i < 20; i++) {
    packets.push(
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
    packets.push(
      ...psiPackets(
        0x100,
        [pmt(101, 0x101, [{ type: 0x1b, pid: 0x101, descriptors: CA }], 2)],
        psiCc[1],
      ),
    );
    packets.push(
      ...psiPackets(
        0x200,
        [pmt(102, 0x201, [{ type: 0x1b, pid: 0x201, descriptors: CA }])],
        psiCc[2],
      ),
    );
    for (let j = 0; j < 50; j++) packets.push(nullPacket());
  }
  writeFileSync(file, Buffer.concat(packets));
}

interface CamStatus {
  state: string;
  present: boolean;
  resets: number;
  application?: { menu: string; manufacturer: number };
  caSystemIds?: number[];
  programmes: { pnr: number; state: string; reason?: string }[];
  lastError?: string;
}

t.test(
  'a CAM on a tuner adapter: initialised, descrambles one programme, refuses another',
  async (t) => {
    const fake = await fakeDvb(t);
    const mux = path.join(fake.dir, 'ca.ts');
    caMux(mux);
    fake.setMux([{ system: 3, freq: FREQ_KHZ * 1000, bitrate: BITRATE, file: mux }]);
    fake.setControl({ cam: 0 });
    const srv = await startServer(t, {
      env: fake.env({
        FAKE_DVB_DELSYS: '3',
        FAKE_DVB_CAM:
          'ready-ms=1000 reply-ms=50 refuse=102 caids=0x0b00,0x1702 manufacturer=0x4a20 menu=Test_CAM',
      }) as Record<string, string>,
      config: {
        'dvb-adapter': [
          {
            id: 1,
            name: 'cam',
            type: 3,
            freq: FREQ_KHZ,
            adapter: 0,
            pause: false,
            'cam-pnr': [101, 102],
          },
        ],
      },
    });
    const cam = async () =>
      ((await (await fetch(`${srv.url}/data/dvb-adapter/1`)).json()) as { cam: CamStatus }).cam;

    const absent = await waitFor('the CAM absent', async () => {
      const c = await cam();
      return c?.state === 'absent' ? c : undefined;
    });
    t.equal(absent.present, false);
    fake.setControl({ cam: 1 });
    const ready = await waitFor(
      'the CAM ready with both answers',
      async () => {
        const c = await cam();
        return c?.state === 'ready' &&
          c.programmes.every((p) => p.state !== 'sent' && p.state !== 'waiting for PMT')
          ? c
          : undefined;
      },
      20_000,
    );
    t.match(ready, {
      present: true,
      application: { menu: 'Test CAM', manufacturer: 0x4a20 },
      caSystemIds: [0x0b00, 0x1702],
      programmes: [
        { pnr: 101, state: 'descrambling' },
        { pnr: 102, state: 'refused', reason: 'descrambling not possible: no entitlement' },
      ],
    });
    // The ok_descrambling of the last programme and the date may still be on their way.
    const seen = await waitFor('the whole exchange in the log', async () => {
      const e = fake.entries();
      return e.filter((x) => x.op === 'cam-ca-pmt').length >= 4 &&
        e.some((x) => x.op === 'cam-date-time')
        ? e
        : undefined;
    });
    t.ok(
      seen.some((e) => e.op === 'CA_RESET'),
      'the slot was reset',
    );
    const caPmts = seen
      .filter((e) => e.op === 'cam-ca-pmt')
      .map((e) => [e['pnr'], e['list'], e['cmd']]);
    t.same(
      caPmts.slice(0, 4),
      [
        [101, 1, 3],
        [102, 2, 3],
        [101, 1, 1],
        [102, 2, 1],
      ],
      'the list first/last as a query, then ok_descrambling',
    );
    t.ok(
      seen.some((e) => e.op === 'cam-date-time'),
      'the module asked for and got the date',
    );
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    t.match(metrics, /sluice_dvb_cam_ready\{adapter="cam"\} 1/);
    t.match(metrics, /sluice_dvb_cam_descrambling\{adapter="cam"\} 1/);
    const status = (await (await fetch(`${srv.url}/data/status`)).json()) as {
      notYetUsed: { setting: string }[];
    };
    t.notOk(
      status.notYetUsed.some((e) => e.setting === 'cam-pnr'),
      'cam-pnr is no longer listed as not yet used',
    );

    // Pulled out, put back: reset and initialised again.
    fake.setControl({ cam: 0 });
    await waitFor('the CAM pulled out', async () =>
      (await cam()).state === 'absent' ? true : undefined,
    );
    fake.setControl({ cam: 1 });
    const back = await waitFor(
      'the CAM ready again',
      async () => {
        const c = await cam();
        return c.state === 'ready' && c.resets > ready.resets ? c : undefined;
      },
      20_000,
    );
    // The module resets itself: the host notices and starts over after its backoff.
    fake.setControl({ cam: 1, 'cam-reset': 1 });
    await waitFor(
      'the CAM initialised after its own reset',
      async () => {
        const c = await cam();
        return c.state === 'ready' &&
          c.resets > back.resets &&
          c.lastError === 'the CAM reset itself'
          ? c
          : undefined;
      },
      20_000,
    );
  },
);
