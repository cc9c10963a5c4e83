// The reconciler's public surface: plan, render, apply loop and the applied-state file.
export { apply, BACKOFF_INITIAL_MS, BACKOFF_MAX_MS, backoffDelay } from './apply.ts';
export { createHost } from './host.ts';
export { PENDING_NO_DRIVER, ReconcileLoop, type ReconcileLoopOptions } from './loop.ts';
export { orderLevels } from './order.ts';
export { plan, planIsEmpty } from './plan.ts';
export { planToJson, renderPlanJson, renderPlanText, SENSITIVE } from './render.ts';
export { loadStateFile, readStateFileInfo, STATE_FILE_NAME, writeStateFile } from './state-file.ts';
export type * from './types.ts';
export { resourceLabel } from './values.ts';
