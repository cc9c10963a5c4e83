// The OTT services alive in this process, by stream name, so an adaptive group can combine
// the packagers of its member streams without reaching into the stream instances.
import type { StreamOttService } from './service.ts';

const services = new Map<string, StreamOttService>();

export function registerOttService(name: string, svc: StreamOttService): () => void {
  services.set(name, svc);
  return () => {
    if (services.get(name) === svc) services.delete(name);
  };
}

export function findOttService(name: string): StreamOttService | undefined {
  return services.get(name);
}
