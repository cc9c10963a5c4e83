// A monitor (mode 2) reports its frequency in spec 1's units for `freq`: MHz for satellite
// (the LNB's IF read back in kHz from the frontend), kHz for terrestrial (read back in Hz).
import t from 'tap';
import type { Resource } from '../../src/config/types.ts';
import type { DvbDevices } from '../../src/drivers/dvb-adapter/devices.ts';
import { DvbAdapterDriver } from '../../src/drivers/dvb-adapter/driver.ts';
import { silentLogger } from '../../src/log.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';
import type { Teardown } from '../helpers/server.ts';

/** A frontend locked on `frequency` as the kernel reads it back (kHz satellite, Hz else). */
function onlyFrontend(system: number, frequency: number): DvbDevices {
  const status = { status: 0x1f, lock: true, signal: -50, cnr: 20 };
  return {
    frontend: () => ({
      info: () => ({ name: 'fake', systems: [system] }),
      tune: async () => undefined,
      status: () => ({ ...status, preErrorBits: null, preTotalBits: null }) as never,
      tuned: () => ({ system, frequency }),
      close: () => undefined,
    }),
    dvr: () => {
      throw new Error('a monitor reads no dvr');
    },
    ca: () => {
      throw new Error('a monitor opens no ca');
    },
  };
}

async function monitor(t: Teardown, type: number, devices: DvbDevices, freq = 0) {
  const spec = { id: 1, name: 'm', mode: 2, type, freq, pause: false, adapter: 0, device: 0 };
  const res = {
    kind: 'dvb-adapter',
    key: '1',
    name: 'm',
    pointer: '/dvb-adapter/0',
    deps: [],
    spec,
  };
  const host = { log: silentLogger, clock: new ManualClock(), services: new Services() };
  const a = await new DvbAdapterDriver(devices).create(
    res as unknown as Resource<never>,
    host as never,
  );
  t.teardown(() => a.close());
  return a.status();
}

t.test('satellite, read back: the IF in MHz', async (t) => {
  const st = await monitor(t, 6, onlyFrontend(6, 1_128_500));
  t.match(st, { state: 'locked', system: 6, intermediateFrequency: 1128.5 });
  t.notOk('frequency' in st, 'the downlink frequency is unknown to the frontend');
});

t.test('satellite, freq set: as configured, MHz', async (t) => {
  t.match(await monitor(t, 5, onlyFrontend(5, 1_128_500), 11778), { frequency: 11778 });
});

t.test('terrestrial, read back: kHz', async (t) => {
  t.match(await monitor(t, 3, onlyFrontend(3, 522_000_000)), { frequency: 522000, system: 3 });
});
