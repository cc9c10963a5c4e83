// What the EPG server serves, without its HTTP: the server's settings (`epg-server`), the
// access a request was granted, and the plain and gzip XMLTV bodies per channel set, rebuilt
// when the EPG update counter moves. Listeners and authentication: src/api/epg-server.ts.

import type { EpgServerApplied } from '../config/spec-types.generated.ts';
import { ServiceKey } from '../util/services.ts';
import type { ChannelRef, EpgRuntime } from './runtime.ts';
import { buildXmltvBodies, type XmltvBodies, type XmltvHeader } from './xmltv-export.ts';

export interface EpgServerSettings {
  port: number;
  httpsPort: number;
  bindAddress: string;
  certificate: string;
  privateKey: string;
  sourceInfoName: string;
  sourceInfoUrl: string;
}

/** The listener settings of an `epg-server` record (defaults applied: they come from the
 *  schema only). */
export function serverSettings(spec: EpgServerApplied): EpgServerSettings {
  return {
    port: spec.port,
    httpsPort: spec['https-port'],
    bindAddress: spec['bind-address'],
    certificate: spec.certificate,
    privateKey: spec['private-key'],
    sourceInfoName: spec['source-info-name'],
    sourceInfoUrl: spec['source-info-url'],
  };
}

/** What a request may see. */
export type Access = { kind: 'all' } | { kind: 'set'; set: number } | { kind: 'none' };

/** Plain and gzip XMLTV bodies per channel set, tagged with the update counter. */
export class XmltvCache {
  private entries = new Map<string, { counter: number; bodies: XmltvBodies }>();
  private building = new Map<string, Promise<XmltvBodies>>();

  constructor(
    private rt: EpgRuntime,
    private header: () => XmltvHeader,
  ) {}

  clear(): void {
    this.entries.clear();
  }

  async get(access: Access): Promise<XmltvBodies> {
    const key = access.kind === 'set' ? `set:${access.set}` : access.kind;
    const counter = this.rt.counter;
    const hit = this.entries.get(key);
    if (hit && hit.counter === counter) return hit.bodies;
    let p = this.building.get(key);
    if (!p) {
      p = this.build(access).finally(() => this.building.delete(key));
      this.building.set(key, p);
      p.then((bodies) => this.entries.set(key, { counter, bodies })).catch(() => undefined);
    }
    return p;
  }

  private async build(access: Access): Promise<XmltvBodies> {
    let channels: ChannelRef[] = [];
    if (access.kind === 'all') channels = this.rt.allChannels();
    else if (access.kind === 'set' && this.rt.channelSets.has(access.set)) {
      channels = this.rt.channelsOfSet(access.set);
    }
    try {
      return await buildXmltvBodies(this.rt, channels, this.header());
    } catch (err) {
      // A transient database failure gives an empty tv element (spec 2).
      this.rt.log.warn({ err }, 'XMLTV build failed; serving an empty document');
      return buildXmltvBodies(this.rt, [], this.header());
    }
  }
}

export interface ListenerPorts {
  http: number;
  https?: number;
}

/** Which listeners an update restarted. */
export interface Restarted {
  http: boolean;
  https: boolean;
}

/** The running EPG server as its driver sees it (built by src/api/epg-server.ts, handed to
 *  the driver through the EPG_HTTP_SERVICE so that drivers/ need not know the HTTP layer). */
export interface EpgHttpServer {
  /** Listen on the HTTP port and, with a certificate and key, the HTTPS port. */
  listen(): Promise<ListenerPorts>;
  ports(): ListenerPorts;
  /** Take new settings: restart only the listener whose socket or TLS settings changed. */
  apply(next: EpgServerSettings): Promise<Restarted>;
  /** The certificate HTTPS serves now, for status (absent without HTTPS). */
  certificate?(): { subject: string; notAfter: string; fingerprint256: string } | undefined;
  close(): Promise<void>;
}

export type EpgHttpServerFactory = (rt: EpgRuntime, settings: EpgServerSettings) => EpgHttpServer;

export const EPG_HTTP_SERVICE = new ServiceKey<EpgHttpServerFactory>('epg-http-server');
