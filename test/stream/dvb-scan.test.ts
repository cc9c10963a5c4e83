import path from 'node:path';
import t from 'tap';
import { channelFile } from '../helpers/dvb-cases.ts';
import { satelliteNit, terrestrialNit, transponderWithNit } from '../helpers/dvb-nit.ts';
import { fakeDvb, runScan } from '../helpers/fake-dvb.ts';
import { startServer, waitFor } from '../helpers/server.ts';

const SECONDS = 4;
const NETWORK = [
  { tsid: 1, kHz: 602000 },
  { tsid: 2, kHz: 610000 },
  { tsid: 3, kHz: 618000 },
];

/** An MPTS with the network's NIT after every PAT. */
function transponder(
  file: string,
  programmes: { pnr: number; title: string }[],
  nit = terrestrialNit(0x2001, 'Sluice Net', NETWORK),
): number {
  return transponderWithNit(file, programmes, nit, SECONDS);
}

t.test('a scan follows the NIT and lists the services with names', async (t) => {
  const fake = await fakeDvb(t);
  const a = path.join(fake.dir, 'a.ts');
  const b = path.join(fake.dir, 'b.ts');
  const rateA = transponder(a, [
    { pnr: 101, title: 'One' },
    { pnr: 102, title: 'Two' },
  ]);
  const rateB = transponder(b, [{ pnr: 201, title: 'Three' }]);
  fake.setMux([
    { system: 3, freq: 602_000_000, bitrate: rateA, file: a },
    { system: 3, freq: 610_000_000, bitrate: rateB, file: b },
  ]);
  const srv = await startServer(t, {
    env: fake.env({ FAKE_DVB_DELSYS: '3,16' }) as Record<string, string>,
    config: {
      'dvb-adapter': [{ id: 4, name: 'scan', mode: 1, type: 3, adapter: 0, pause: false }],
    },
  });
  const adapter = async () =>
    (await (await fetch(`${srv.url}/data/dvb-adapter/4`)).json()) as Record<string, unknown>;
  await waitFor('the scanner ready', async () =>
    (await adapter())['state'] === 'ready' ? true : undefined,
  );
  const start = await fetch(`${srv.url}/data/dvb-adapter/4/scan`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ transponders: [{ freq: 602000 }] }),
  });
  t.equal(start.status, 202);
  const again = await fetch(`${srv.url}/data/dvb-adapter/4/scan`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ transponders: [{ freq: 602000 }] }),
  });
  t.equal(again.status, 409, 'one scan at a time');
  const scan = await waitFor(
    'the scan done',
    async () => {
      const s = (await adapter())['scan'] as {
        state: string;
        transponders: Record<string, unknown>[];
      };
      return s.state === 'done' ? s : undefined;
    },
    60_000,
  );
  t.same(
    scan.transponders.map((x) => [x['freq'], x['state'], x['transportStreamId'], x['networkName']]),
    [
      [602000, 'locked', 1, 'Sluice Net'],
      [610000, 'locked', 1, 'Sluice Net'],
      [618000, 'no lock', undefined, undefined],
    ],
  );
  const services = scan.transponders.flatMap(
    (x) => (x['services'] as Record<string, unknown>[] | undefined) ?? [],
  );
  t.same(
    services.map((x) => [
      x['pnr'],
      x['name'],
      x['provider'],
      x['type'],
      x['scrambled'],
      x['pmtPid'],
      x['pids'],
    ]),
    [
      // ffmpeg names each programme's provider itself
      [101, 'One', 'FFmpeg', 1, false, 4096, [256, 257]],
      [102, 'Two', 'FFmpeg', 1, false, 4097, [258, 259]],
      [201, 'Three', 'FFmpeg', 1, false, 4096, [256, 257]],
    ],
  );
  t.equal(services.length, 3);
  const tuned = fake
    .entries()
    .filter((e) => e.op === 'FE_SET_PROPERTY' && e.props?.some(([c]) => c === 1));
  t.same(
    tuned.map((e) => e.props![0]),
    [
      [3, 602_000_000],
      [3, 610_000_000],
      [3, 618_000_000],
    ],
    'tuned each transponder once',
  );

  // The reference: dvbv5-scan from the same first transponder, through the same layer.
  const ours = tuned.map((e) => e.props!.map(([c, v]) => [c, c === 1 ? 0 : v]));
  const ref = await runScan(
    fake,
    '[T]\n\tDELIVERY_SYSTEM = DVBT\n\tFREQUENCY = 602000000\n\tBANDWIDTH_HZ = 8000000\n',
    [3, 16],
  );
  const theirs = ref.entries
    .filter((e) => e.op === 'FE_SET_PROPERTY' && e.props?.some(([c]) => c === 1))
    .map((e) => e.props!.map(([c, v]) => [c, c === 1 ? 0 : v]));
  t.same(
    ours,
    theirs,
    'the same transponders tuned with the same properties as dvbv5-scan (NIT code rates, guard, mode included)',
  );
  const channels = [...ref.channels.matchAll(/\[(.+)\]\n((?:\t.+\n?)+)/g)].map((m) => {
    const field = (k: string) => Number(new RegExp(`${k} = (\\d+)`).exec(m[2]!)?.[1]);
    return [field('SERVICE_ID'), m[1], [field('VIDEO_PID'), field('AUDIO_PID')]];
  });
  t.same(
    services.map((x) => [x['pnr'], x['name'], x['pids']]),
    channels,
    'the same services, names and PIDs as dvbv5-scan found',
  );
});

t.test('satellite: the NIT followed behind a universal LNB, as dvbv5-scan does', async (t) => {
  const fake = await fakeDvb(t);
  const net = [
    { tsid: 1, mhz: 11362, pol: 0 as const, psk8: true, ksym: 22000, fec: 2 },
    { tsid: 2, mhz: 11778, pol: 1 as const, psk8: false, ksym: 27500, fec: 3 },
  ];
  const nit = satelliteNit(0x2002, 'Sat Net', net);
  const a = path.join(fake.dir, 'a.ts');
  const b = path.join(fake.dir, 'b.ts');
  const rateA = transponder(a, [{ pnr: 101, title: 'One' }], nit);
  const rateB = transponder(b, [{ pnr: 201, title: 'Two' }], nit);
  // Intermediate frequencies behind the universal LNB: low band horizontal, high band vertical.
  fake.setMux([
    { system: 6, freq: 1_612_000, voltage: 1, tone: 1, bitrate: rateA, file: a },
    { system: 6, freq: 1_178_000, voltage: 0, tone: 0, bitrate: rateB, file: b },
  ]);
  const lnb = { 'lnb-freq1': 9750, 'lnb-freq2': 10600, 'lnb-freq-range': 11700 };
  const srv = await startServer(t, {
    env: fake.env({ FAKE_DVB_DELSYS: '6,5' }) as Record<string, string>,
    config: {
      'dvb-adapter': [{ id: 5, name: 'sat', mode: 1, type: 6, adapter: 0, pause: false, ...lnb }],
    },
  });
  const adapter = async () =>
    (await (await fetch(`${srv.url}/data/dvb-adapter/5`)).json()) as Record<string, unknown>;
  await waitFor('the scanner ready', async () =>
    (await adapter())['state'] === 'ready' ? true : undefined,
  );
  const first = { freq: 11362, 'symbol-rate': 22000, fec: 2, modulation: 9, 'lnb-polarization': 0 };
  const start = await fetch(`${srv.url}/data/dvb-adapter/5/scan`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ transponders: [first] }),
  });
  t.equal(start.status, 202);
  const scan = await waitFor(
    'the scan done',
    async () => {
      const s = (await adapter())['scan'] as {
        state: string;
        transponders: Record<string, unknown>[];
      };
      return s.state === 'done' ? s : undefined;
    },
    60_000,
  );
  t.same(
    scan.transponders.map((x) => [x['freq'], x['lnb-polarization'], x['state'], x['networkName']]),
    [
      [11362, 0, 'locked', 'Sat Net'],
      [11778, 1, 'locked', 'Sat Net'],
    ],
  );
  const steps = (entries: ReturnType<typeof fake.entries>) =>
    entries
      .filter((e) => ['FE_SET_VOLTAGE', 'FE_SET_TONE', 'FE_SET_PROPERTY'].includes(e.op))
      .filter((e) => e.op !== 'FE_SET_PROPERTY' || e.props?.some(([c]) => c === 1))
      .filter((e) => !(e.op === 'FE_SET_VOLTAGE' && e.v === 2)) // the LNB off at the end
      .map((e) => (e.props ? e.props.map(([c, v]) => [c, c === 1 ? 0 : v]) : `${e.op} ${e.v}`));
  const ours = steps(fake.entries());
  const ref = await runScan(
    fake,
    channelFile({ type: 6, ...first }).replace('[chan]', '[A]'),
    [6, 5],
    ['-l', 'EXTENDED'],
  );
  t.same(
    ours,
    steps(ref.entries),
    'the same voltage, tone and property lists as dvbv5-scan (NIT roll-off included)',
  );
  t.match(ref.channels, /\[Two\]/, 'dvbv5-scan found the second transponder too');
});
