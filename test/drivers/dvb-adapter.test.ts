// The dvb-adapter driver with a fake device interface and injected time (no native code): what
// it opens and tunes per mode, lock lost / re-tune / lock back on its bus, a device that is not
// there yet, reconcile updates (a name touches nothing, a frequency re-tunes, pause closes),
// epg-export, BISS, T2-MI, the monitor's read-back frequency, and close.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { Resource } from '../../src/config/types.ts';
import type { DvbDevices, Frontend } from '../../src/drivers/dvb-adapter/devices.ts';
import { DvbAdapterDriver } from '../../src/drivers/dvb-adapter/driver.ts';
import type { DvbAdapterInstance } from '../../src/drivers/dvb-adapter/instance.ts';
import { STATUS_POLL_MS } from '../../src/drivers/dvb-adapter/instance.ts';
import { dvbAdapterRegistry } from '../../src/drivers/dvb-adapter/registry.ts';
import type { Tuning } from '../../src/dvb/tuning.ts';
import { EIT_SINK_SERVICE } from '../../src/engine/bus.ts';
import { DemuxerInput } from '../../src/inputs/demuxer/input.ts';
import { silentLogger } from '../../src/log.ts';
import { bissScramble } from '../../src/native/biss.ts';
import { NativeError } from '../../src/native/errors.ts';
import type { FieldChange } from '../../src/reconciler/types.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';
import { makeTwoProgrammeTs, P101 } from '../helpers/biss.ts';
import { eitSection, totSection } from '../helpers/epg-eit.ts';
import { encodeOuter } from '../helpers/t2mi-encode.ts';
import { packet, psiPackets, sdt } from '../helpers/ts-craft.ts';

class FakeDevices implements DvbDevices {
  lock = true;
  present = true;
  opened: { adapter: number; device: number; releaseLnb: boolean; readOnly: boolean }[] = [];
  tunings: Tuning[] = [];
  closed = 0;
  dvrs: ((b: Buffer) => void)[] = [];
  frontend(adapter: number, device: number, releaseLnb: boolean, readOnly: boolean): Frontend {
    if (!this.present) throw new NativeError('ENOENT', `open: No such file or directory`);
    this.opened.push({ adapter, device, releaseLnb, readOnly });
    return {
      info: () => ({ name: 'fake', systems: [3] }),
      tune: async (tuning) => {
        this.tunings.push(tuning);
      },
      status: () => ({
        status: this.lock ? 0x1f : 0,
        lock: this.lock,
        signal: this.lock ? -50 : -90,
        cnr: this.lock ? 20 : null,
        preErrorBits: 10,
        preTotalBits: 1e6 * (this.tunings.length + this.opened.length),
        errorBlocks: 2,
        totalBlocks: 100,
      }),
      tuned: () => ({ system: 3, frequency: 522_000_000 }),
      close: () => {
        this.closed++;
      },
    };
  }
  dvr(_o: unknown, onData: (b: Buffer) => void) {
    this.dvrs.push(onData);
    return { stats: () => ({ bytes: 0 }), setPids: () => undefined, close: () => undefined };
  }
  ca(): never {
    throw new NativeError('ENOENT', 'open: No such file or directory');
  }
}

function setup(spec: Record<string, unknown>) {
  const clock = new ManualClock();
  const services = new Services();
  const devices = new FakeDevices();
  const host = {
    log: silentLogger,
    clock,
    dataDir: '/nonexistent',
    lookup: () => undefined,
    services,
  };
  const res = (s: Record<string, unknown>) =>
    ({
      kind: 'dvb-adapter',
      key: '1',
      name: 'a',
      pointer: '/dvb-adapter/0',
      deps: [],
      spec: {
        id: 1,
        name: 'a',
        mode: 0,
        pause: false,
        adapter: 0,
        device: 0,
        'buffer-size': 4,
        'enable-alert': true,
        ...s,
      },
    }) as unknown as Resource<never>;
  const create = async () =>
    (await new DvbAdapterDriver(devices).create(
      res(spec),
      host as never,
    )) as unknown as DvbAdapterInstance;
  return { clock, services, devices, res, create };
}

const T = { type: 3, freq: 602000 };
/** Lets the tunings started by a timer finish (they resolve on the next turns of the loop). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test(
  'mode 0: opens, tunes, locks; TS on the bus; lost lock ends it, re-tunes, lock back splices',
  async (t) => {
    const { clock, devices, create, services } = setup(T);
    const a = await create();
    t.equal(dvbAdapterRegistry(services).find('a'), a, 'listed by name');
    t.same(devices.opened, [{ adapter: 0, device: 0, releaseLnb: true, readOnly: false }]);
    t.equal(devices.tunings.length, 1);
    t.match(a.status(), { state: 'locked', lock: true, signal: -50, snr: 20, unc: 2 });
    const events: string[] = [];
    a.hub.subscribe({
      packets: (b) => events.push(`packets ${b.length}`),
      end: () => events.push('end'),
      discontinuity: (r) => events.push(`discontinuity ${r}`),
    });
    devices.dvrs[0]!(Buffer.alloc(188 * 2, 0x47));
    devices.lock = false;
    clock.advance(STATUS_POLL_MS);
    t.match(a.status(), { state: 'no lock', lock: false, snr: null });
    t.same(
      a.alertView(),
      { name: 'a', enableAlert: true, locked: false, message: 'the frontend has no lock' },
      'the alerter sees the lost lock',
    );
    clock.advance(2000);
    t.equal(devices.tunings.length, 2, 're-tuned after the grace');
    await settle();
    clock.advance(1000);
    t.equal(devices.tunings.length, 3, 'again after 1 s');
    devices.lock = true;
    clock.advance(STATUS_POLL_MS);
    t.same(events, ['packets 376', 'end', 'discontinuity tuner adapter locked again']);
    t.match(a.status(), { state: 'locked', lockChanges: 2, retunes: 2 });
    await a.close();
    await a.close();
    t.equal(devices.closed, 1, 'closed once');
    t.equal(dvbAdapterRegistry(services).find('a'), undefined, 'gone from the registry');
  },
);

t.test('a device not there yet: error, tried again with a doubling delay', async (t) => {
  const { clock, devices, create } = setup(T);
  devices.present = false;
  const a = await create();
  t.match(a.status(), { state: 'error', message: /No such file/ });
  clock.advance(1000);
  clock.advance(1999);
  devices.present = true;
  t.equal(devices.opened.length, 0);
  clock.advance(1);
  t.equal(devices.opened.length, 1, 'opened on the second retry (1 s, then 2 s)');
  await settle();
  t.match(a.status(), { state: 'locked' });
  await a.close();
});

t.test('updates: a name touches nothing, a frequency re-tunes, pause closes', async (t) => {
  const { devices, create, res } = setup(T);
  const a = await create();
  const change = (path: string, apply: FieldChange['apply']): FieldChange[] => [
    { path, before: 0, after: 1, apply },
  ];
  await a.update(res({ ...T, name: 'b' }) as never, change('name', 'hot'));
  t.equal(devices.opened.length, 1);
  t.equal(devices.tunings.length, 1);
  await a.update(res({ ...T, freq: 610000 }) as never, change('freq', 'restart'));
  t.equal(devices.tunings.length, 2);
  t.equal(devices.tunings[1]!.props[0]![1], 610_000_000, 'the new frequency');
  await a.update(res({ ...T, freq: 610000, pause: true }) as never, change('pause', 'hot'));
  t.match(a.status(), { state: 'paused', lock: false });
  t.equal(devices.closed, 2);
  await a.close();
});

t.test('epg-export: the multiplex EIT and TOT go to the guide, other tables do not', async (t) => {
  const { devices, create, services } = setup({ ...T, 'epg-export': true });
  const got: { stream: string; pid: number; table: number }[] = [];
  services.set(EIT_SINK_SERVICE, { section: (src, data) => got.push({ ...src, table: data[0]! }) });
  const a = await create();
  const eit = eitSection({ sid: 101, tsid: 1, onid: 2, events: [] });
  const tot = totSection(Date.UTC(2026, 0, 1), 'GBR', 0);
  const cc = { n: 0 };
  devices.dvrs[0]!(
    Buffer.concat([
      ...psiPackets(0x12, [eit], cc),
      ...psiPackets(0x14, [tot]),
      ...psiPackets(0x11, [sdt([{ id: 101, name: 'x', provider: 'y' }])]),
    ]),
  );
  t.same(got, [
    { stream: 'adapter:a', pid: 0x12, table: 0x4e },
    { stream: 'adapter:a', pid: 0x14, table: 0x73 },
  ]);
  await a.close();
});

t.test(
  'biss-pnr / biss-key: the adapter TS is descrambled before its readers get it',
  async (t) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-dvb-biss-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const clear = makeTwoProgrammeTs(path.join(dir, 'clear.ts'), 1);
    const key = '112233445566';
    const scrambled = Buffer.from(clear);
    t.ok(bissScramble(scrambled, key, P101.pids) > 0, 'the fixture is scrambled');
    const { devices, create } = setup({ ...T, 'biss-pnr': [101], 'biss-key': [key] });
    const a = await create();
    const out: Buffer[] = [];
    a.hub.subscribe({ packets: (b) => out.push(Buffer.from(b)) });
    const BATCH = 188 * 64;
    for (let o = 0; o < scrambled.length; o += BATCH)
      devices.dvrs[0]!(Buffer.from(scrambled.subarray(o, o + BATCH)));
    t.ok(Buffer.concat(out).equals(clear), 'the readers get the clear multiplex');
    t.match(a.status()['biss'], { targets: [{ pnr: 101, state: 'descrambling' }] });
    await a.close();
  },
);

t.test('mpegts-filter-ca-clear reaches the demuxers of the adapter (src 1)', async (t) => {
  const { clock, create, res } = setup({ ...T, 'mpegts-filter-ca-clear': true });
  const a = await create();
  t.equal(a.hub.filterCaClear, true);
  const demuxer = new DemuxerInput(
    { type: 'demuxer', src: 1, 'mpts-id': 1, pnr: 101 },
    {
      log: silentLogger,
      clock,
      dataDir: '/nonexistent',
      streamName: 's',
      index: 0,
      onData: () => undefined,
      bus: (ref) => (ref.kind === 'adapter' && ref.key === '1' ? a.hub : undefined),
    },
  );
  demuxer.start();
  const opts = () =>
    (demuxer as unknown as { lease: { consumer: { opts: { filterCaClear?: boolean } } } }).lease
      .consumer.opts;
  t.equal(opts().filterCaClear, true, 'leased with CA stripping');
  await a.update(res({ ...T, 'mpegts-filter-ca-clear': false }) as never, [
    { path: 'mpegts-filter-ca-clear', before: true, after: false, apply: 'restart' },
  ]);
  clock.advance(1000);
  t.equal(opts().filterCaClear, false, 'leased again without it after the change');
  await demuxer.close();
  await a.close();
});

t.test('t2mi-mode: the readers get the inner TS of t2mi-plp', async (t) => {
  const inner = (plp: number) =>
    Buffer.concat(
      Array.from({ length: 300 }, (_, n) =>
        packet({ pid: 0x100 + plp, cc: n & 15, payload: Buffer.alloc(184, (n + plp) & 0xff) }),
      ),
    );
  const outer = encodeOuter({
    plps: [
      { plp: 0, ts: inner(0) },
      { plp: 3, ts: inner(3) },
    ],
    seconds: 1,
  });
  for (const [name, fields] of [
    ['automatic', { 't2mi-mode': 2, 't2mi-plp': 3 }],
    ['manual, carrier PID given', { 't2mi-mode': 1, 't2mi-pid': 0x1000, 't2mi-plp': 3 }],
  ] as const) {
    const { devices, create } = setup({ ...T, ...fields });
    const a = await create();
    const out: Buffer[] = [];
    a.hub.subscribe({ packets: (b) => out.push(Buffer.from(b)) });
    for (let o = 0; o < outer.length; o += 188 * 50)
      devices.dvrs[0]!(Buffer.from(outer.subarray(o, o + 188 * 50)));
    t.ok(Buffer.concat(out).equals(inner(3)), `${name}: PLP 3's inner TS, whole`);
    t.match(a.status()['t2mi'], { plp: 3, carrier: 'found' }, name);
    await a.close();
  }
});

t.test('records that do not tune', async (t) => {
  for (const [spec, state, message] of [
    [{ type: 5, freq: 11778 }, 'error', 'lnb-polarization is not set'],
    [{ ...T, adapter: -1 }, 'unassigned', 'adapter is -1: no device assigned'],
    [{ ...T, mode: 1 }, 'ready', undefined],
    [{ ...T, pause: true }, 'paused', undefined],
  ] as const) {
    const { devices, create } = setup(spec);
    const a = await create();
    t.match(a.status(), { state, message }, state);
    t.equal(devices.opened.length, 0, `${state}: no device opened`);
    t.equal(a.alertView() === null, state !== 'error', `${state}: a fault for the alerter or none`);
    await a.close();
  }
  const { create } = setup({ type: 5, freq: 11778 });
  const a = await create();
  t.same(a.status().warnings, ['lnb-polarization is not set'], 'the adapter reports it');
  await a.close();
});

t.test('mode 2: read-only, never tunes or re-tunes, frequency read back', async (t) => {
  const { clock, devices, create } = setup({ mode: 2, type: 3 });
  const a = await create();
  t.same(devices.opened, [{ adapter: 0, device: 0, releaseLnb: false, readOnly: true }]);
  t.match(a.status(), { state: 'locked', frequency: 522000, system: 3, snr: 20 });
  devices.lock = false;
  clock.advance(10_000);
  t.equal(devices.tunings.length, 0);
  t.match(a.status(), { state: 'no lock' });
  t.notOk('retunes' in a.status(), 'a monitor has no re-tunes to count');
  await a.close();
  const fixed = setup({ mode: 2, type: 3, freq: 498000 });
  const b = await fixed.create();
  t.match(b.status(), { frequency: 498000 });
  await b.close();
});
