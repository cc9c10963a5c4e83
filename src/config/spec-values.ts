// Typed reads of a spec's members with a fallback: what inputs and outputs use to read their
// (already validated, defaults applied) records without casts. Drivers read their kind's
// generated record type instead (src/reconciler/driver.ts: SpecOf).

type Spec = Record<string, unknown>;

/** A finite number, else `dflt`. */
export function num(spec: Spec, key: string, dflt: number): number {
  const v = spec[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : dflt;
}

/** An integer, else `dflt`. */
export function int(spec: Spec, key: string, dflt: number): number {
  const v = spec[key];
  return typeof v === 'number' && Number.isInteger(v) ? v : dflt;
}

/** A string, else `dflt` (empty by default). */
export function str(spec: Spec, key: string, dflt = ''): string {
  const v = spec[key];
  return typeof v === 'string' ? v : dflt;
}

/** A boolean, else `dflt`. */
export function bool(spec: Spec, key: string, dflt: boolean): boolean {
  const v = spec[key];
  return typeof v === 'boolean' ? v : dflt;
}

/** The strings of an array member (other items skipped); empty when absent. */
export function strList(spec: Spec, key: string): string[] {
  const v = spec[key];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
