// Keeps one `process.nextTick` task object alive for the life of the process, so the object
// shapes V8 recorded for Node's task-object literal are never freed. bin/sluice.js calls it
// before anything else; test/cli/tick-shape.test.ts shows what happens without it.
import { createHook } from 'node:async_hooks';

/** The kept task object (only its shape matters). */
let keptTickObject;

/*
 * Why: Node builds every nextTick task as an object literal with computed keys
 * (`{ [async_id_symbol], [trigger_async_id_symbol], callback, args }`). For each property
 * defined into such a literal V8 records the one object shape it saw, and the first time it
 * sees another shape it marks that property megamorphic for good: optimised code then defines
 * three of the four properties through the runtime, on every tick. The recorded shapes are
 * held weakly. After a few full collections with no task object alive they are freed, and the
 * next tick builds new ones, which V8 counts as "another shape". Node's HTTP server schedules
 * several ticks per request, so a server whose start-up collections fell that way served live
 * playlists about a quarter slower for its whole life (bench/RESULTS.md, "OTT: delivery",
 * session 4). A live task object keeps its shape, and the shapes it was built through, alive.
 */
export function keepTickObjectShape() {
  if (keptTickObject) return;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') keptTickObject = resource;
    },
  });
  hook.enable();
  process.nextTick(() => {});
  hook.disable();
}
