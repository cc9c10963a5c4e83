// The server's shared services (Host.services): typed keys, so a lookup needs no cast. A key
// carries the service's type; the map is keyed by the key's name, so two servers in one
// process (as in tests) each hold their own services under the same keys.

/** The name of a shared service and, at compile time, the type of what it holds. */
export class ServiceKey<T> {
  /** Never set: ties the key to T so `Services.get` returns a T. */
  declare readonly type?: T;
  constructor(readonly name: string) {}
}

export class Services {
  private readonly byName = new Map<string, unknown>();

  get<T>(key: ServiceKey<T>): T | undefined {
    return this.byName.get(key.name) as T | undefined;
  }

  set<T>(key: ServiceKey<T>, value: T): this {
    this.byName.set(key.name, value);
    return this;
  }

  delete(key: ServiceKey<unknown>): boolean {
    return this.byName.delete(key.name);
  }
}
