// Dependency order for apply: resources grouped into levels; everything in a level may run at
// once, level n+1 only after level n. Teardown walks the levels backwards. Each kind's floor
// level is in src/config/kinds.ts (settings, support records, streams, groups); `deps` push a
// resource further down (an MPTS stream before its demuxers, an EPG login after its set).
import { kindLevel } from '../config/kinds.ts';
import { type Resource, resourceId } from '../config/types.ts';

export interface Ordering {
  /** Resource ids per level, first level first; config order kept inside a level. */
  levels: string[][];
  /** Ids caught in a dependency cycle (their cycle edge was ignored). */
  cycles: string[];
}

/** Levels of the resources in `set` (id → resource); deps outside the set are ignored. */
export function orderLevels(set: Map<string, Resource>): Ordering {
  const level = new Map<string, number>();
  const visiting = new Set<string>();
  const cycles: string[] = [];

  const visit = (id: string, r: Resource): number => {
    const known = level.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) {
      cycles.push(id);
      return -1;
    }
    visiting.add(id);
    let lv = kindLevel(r.kind);
    for (const d of r.deps) {
      const did = resourceId(d);
      const dep = set.get(did);
      if (!dep || did === id) continue;
      lv = Math.max(lv, visit(did, dep) + 1);
    }
    visiting.delete(id);
    level.set(id, lv);
    return lv;
  };

  for (const [id, r] of set) visit(id, r);
  const levels: string[][] = [];
  for (const [id] of set) {
    const lv = level.get(id) ?? 0;
    while (levels.length <= lv) levels.push([]);
    levels[lv]!.push(id);
  }
  return { levels: levels.filter((l) => l.length > 0), cycles };
}
