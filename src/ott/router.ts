// Dispatch of per-stream HTTP paths (`/{name}/mpegts`, `/{name}/index.m3u8`, …). Streams come
// and go at run time while Fastify's routes are fixed at start, so the app has one catch-all
// route that looks the name up here; stream and adaptive-group instances register themselves.

import { ServiceKey } from '../util/services.ts';
import type { OttHandler } from './request.ts';

export type { OttHandler };

export const OTT_ROUTER_SERVICE = new ServiceKey<OttRouter>('ott-router');

export class OttRouter {
  private handlers = new Map<string, OttHandler>();

  /** Register a name; returns the function that removes it. A name is owned by one handler. */
  register(name: string, handler: OttHandler): () => void {
    if (this.handlers.has(name)) throw new Error(`OTT name already registered: ${name}`);
    this.handlers.set(name, handler);
    return () => {
      if (this.handlers.get(name) === handler) this.handlers.delete(name);
    };
  }

  lookup(name: string): OttHandler | undefined {
    return this.handlers.get(name);
  }

  names(): string[] {
    return [...this.handlers.keys()];
  }
}
