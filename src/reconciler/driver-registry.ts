// The registry of drivers, one per resource kind. Kinds without a driver are reported by the
// reconciler as `pending: no driver`, never as applied.
import type { ResourceKind } from '../config/types.ts';
import type { Driver } from './driver.ts';

export class DriverRegistry {
  private byKind = new Map<ResourceKind, Driver>();

  /** Add a driver; a second driver for the same kind is a wiring mistake and throws. */
  register(driver: Driver): this {
    if (this.byKind.has(driver.kind)) {
      throw new Error(`a driver for kind "${driver.kind}" is already registered`);
    }
    this.byKind.set(driver.kind, driver);
    return this;
  }

  get(kind: ResourceKind): Driver | undefined {
    return this.byKind.get(kind);
  }

  has(kind: ResourceKind): boolean {
    return this.byKind.has(kind);
  }

  kinds(): ResourceKind[] {
    return [...this.byKind.keys()];
  }
}
