// The built-in drivers, one per resource kind. Each part adds its driver with one line below;
// kinds with no line here show as `pending: no driver`.

import { type Driver, erased } from '../reconciler/driver.ts';
import { DriverRegistry } from '../reconciler/driver-registry.ts';
import { acmeDriver } from './acme.ts';
import { alerterDriver } from './alerter.ts';
import { csDriver, csServerDriver, userDefaultDriver } from './billing.ts';
import { clusterDriver } from './cluster.ts';
import { dvbAdapterDriver } from './dvb-adapter/driver.ts';
import { epgDriver } from './epg.ts';
import { epgChannelSetDriver, epgLoginDriver, epgServerDriver } from './epg-server.ts';
import { epgSourceDriver } from './epg-source.ts';
import { httpServerDriver } from './http-server.ts';
import { mosaicDriver } from './mosaic.ts';
import { serverDriver } from './server.ts';
import { storageDriver, storageListDriver } from './storage.ts';
import { streamDriver } from './stream/driver.ts';
import { streamAdaptiveDriver } from './stream-adaptive.ts';
import { userDriver } from './users.ts';
import { webServerDriver } from './web-server.ts';

export function builtinDrivers(): Driver[] {
  return [
    erased(clusterDriver),
    erased(userDriver),
    erased(httpServerDriver),
    erased(epgDriver),
    erased(epgSourceDriver),
    erased(epgServerDriver),
    erased(epgChannelSetDriver),
    erased(epgLoginDriver),
    erased(storageListDriver),
    erased(storageDriver),
    erased(streamDriver),
    erased(streamAdaptiveDriver),
    erased(mosaicDriver),
    erased(userDefaultDriver),
    erased(csDriver),
    erased(csServerDriver),
    erased(alerterDriver),
    erased(acmeDriver),
    erased(webServerDriver),
    erased(dvbAdapterDriver),
    erased(serverDriver),
    // more drivers: one line each
  ];
}

export function createDriverRegistry(): DriverRegistry {
  const registry = new DriverRegistry();
  for (const d of builtinDrivers()) registry.register(d);
  return registry;
}
