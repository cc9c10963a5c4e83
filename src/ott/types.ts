// Contract between a stream instance and the OTT packager (HLS, LL-HLS, DASH).

import type { Logger } from 'pino';
import type { StreamBus } from '../engine/bus.ts';
import type { Clock } from '../util/clock.ts';
import { ServiceKey, type Services } from '../util/services.ts';
import type { OttReply, OttRequest } from './request.ts';

export const OTT_FACTORY_SERVICE = new ServiceKey<OttFactory>('ott-factory');

export interface OttOptions {
  /** The stream's URL name (`stream-name`). */
  name: string;
  /** The stream record with defaults applied. */
  spec: Record<string, unknown>;
  bus: StreamBus;
  clock: Clock;
  log: Logger;
  /** The server's shared services (host.services): the packager registers itself in the
   *  OTT registry there so adaptive groups find it. Optional for stand-alone use. */
  services?: Services;
}

export interface OttService {
  /** Serve a request under `/{name}/` other than `mpegts` (playlists, manifests, segments). */
  handle(req: OttRequest, reply: OttReply, rest: string): unknown;
  /** The stream record changed (hot fields such as window length). */
  update(spec: Record<string, unknown>): void;
  close(): void;
  status(): Record<string, unknown>;
}

export type OttFactory = (opts: OttOptions) => OttService;
