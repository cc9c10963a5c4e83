// Wires one running server: logger and clock, the reconcile loop with every driver, the config
// service over its source (file or git), the admin API handed to the http-server driver as a
// service. The only place that assembles the parts; close() takes them down in reverse order.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { buildApp } from './api/app.ts';
import type { AppContext } from './api/context.ts';
import { createEpgHttpServer } from './api/epg-server.ts';
import { GitSource } from './config/git.ts';
import { type ConfigPersister, ConfigServiceImpl } from './config/service.ts';
import {
  elideDefaults,
  fieldRules,
  formatConfig,
  formatConfigOver,
  loadProposedText,
} from './config/store.ts';
import type { ConfigDocument } from './config/types.ts';
import { FilePersister, FileWatcher } from './config/watch.ts';
import { viewerGate } from './drivers/billing.ts';
import { ADMIN_HANDLER_SERVICE } from './drivers/http-server.ts';
import { createDriverRegistry } from './drivers/index.ts';
import { PORT_OVERRIDES_SERVICE, type PortOverrides } from './drivers/port-overrides.ts';
import { STREAM_PLACEMENT_SERVICE } from './drivers/stream/placement.ts';
import { USERS_SERVICE, UserTable } from './drivers/users-table.ts';
import { EPG_HTTP_SERVICE } from './epg/xmltv-cache.ts';
import type { Logger } from './log.ts';
import { describeHolder, FileLock } from './native/file-lock.ts';
import { LiveDelivery } from './native/live-http.ts';
import { createOttService, OTT_FACTORY_SERVICE } from './ott/index.ts';
import { LIVE_DELIVERY_SERVICE } from './ott/live-publish.ts';
import { OTT_ROUTER_SERVICE, OttRouter } from './ott/router.ts';
import { StreamWorkers } from './plane/pool.ts';
import { createHost, ReconcileLoop, STATE_FILE_NAME } from './reconciler/index.ts';
import { type Clock, systemClock } from './util/clock.ts';
import { Services } from './util/services.ts';

export interface ServeOptions {
  /** Config file path (file mode); absent with no `git` = an empty config, not persisted. */
  config?: string;
  git?: { url: string; branch?: string; path?: string; pollSec?: number };
  dataDir: string;
  log: Logger;
  clock?: Clock;
  /** Debounce of the file watcher in ms (tests shorten it). */
  watchDebounceMs?: number;
  /** Ports for this run instead of the config's (`sluice serve --port`, `--epg-port`). */
  ports?: PortOverrides;
  /** This server's node in a fleet (`sluice serve --node`, docs/fleet.md). */
  node?: string;
}

export interface RunningServer {
  /** This server's hold on its data dir (docs/cli.md, "One server per data dir"). */
  dataDirLock: FileLock;
  service: ConfigServiceImpl;
  loop: ReconcileLoop;
  git?: GitSource;
  watcher?: FileWatcher;
  close(): Promise<void>;
}

/** A config held in memory only: `serve` without --config or --git. */
class MemoryPersister implements ConfigPersister {
  async persist(): Promise<{ commit?: string }> {
    return {};
  }
}

/** The lock file in the data dir: one server per data dir. */
export const DATA_DIR_LOCK_FILE = 'server.lock';

/** Lock the data dir for this server, or refuse to start, naming the server that has it. */
function lockDataDir(dataDir: string, node: string | undefined): FileLock {
  const details: Record<string, string> = { 'data dir': dataDir };
  if (node) details['node'] = node;
  const got = FileLock.take(path.join(dataDir, DATA_DIR_LOCK_FILE), details);
  if ('lock' in got) return got.lock;
  throw new Error(
    `the data dir ${dataDir} is in use by another sluice server (${describeHolder(got.heldBy)}); ` +
      'nothing was started. Two servers on one data dir would run every stream and recording ' +
      'twice: stop that server first, or give this one a data dir of its own (--data-dir DIR).',
  );
}

export async function startServer(opts: ServeOptions): Promise<RunningServer> {
  const log = opts.log;
  const clock = opts.clock ?? systemClock;
  const dataDir = path.resolve(opts.dataDir);
  await mkdir(dataDir, { recursive: true });
  // First of all: a second server on this data dir must start nothing (no stream, recording,
  // config write or clone). The kernel drops the lock when this process ends, however.
  const dataDirLock = lockDataDir(dataDir, opts.node);

  const services = new Services();
  const users = new UserTable();
  const ottRouter = new OttRouter();
  services.set(USERS_SERVICE, users);
  services.set(OTT_ROUTER_SERVICE, ottRouter);
  // Stream instances package HLS / DASH through this factory (src/ott/).
  services.set(OTT_FACTORY_SERVICE, createOttService);
  services.set(EPG_HTTP_SERVICE, createEpgHttpServer);
  if (opts.ports) services.set(PORT_OVERRIDES_SERVICE, opts.ports);
  // Plain live HLS-TS requests are answered by the native engine (docs/ott.md); the HTTP
  // listener hands it connections unless `native-delivery` is false.
  const delivery = new LiveDelivery({
    onError: (err) => log.warn({ err, part: 'live-delivery' }, 'native live delivery'),
  });
  services.set(LIVE_DELIVERY_SERVICE, delivery);

  const host = createHost({ log, clock, dataDir, services });
  // The data plane's worker threads (server `stream-workers`; none until the setting says).
  const plane = new StreamWorkers({
    services,
    router: ottRouter,
    log,
    dataDir,
    logLevel: log.level,
    desired: () => theLoop.desiredNow(),
  });
  services.set(STREAM_PLACEMENT_SERVICE, plane);
  // Viewer authorisation (docs/billing.md): made before any stream, so every OTT service
  // follows it from its start; the `cs` drivers configure it.
  const gate = viewerGate(host);
  // While it gates playback, the native engine answers only viewers it gave a pass.
  gate.usePasses(delivery);
  const theLoop = new ReconcileLoop({
    registry: createDriverRegistry(),
    host,
    rules: fieldRules,
    stateFile: path.join(dataDir, STATE_FILE_NAME),
    log: log.child({ part: 'reconciler' }),
    clock,
    ...(opts.node ? { node: opts.node } : {}),
  });

  let git: GitSource | undefined;
  let persister: ConfigPersister;
  let source: string;
  if (opts.git) {
    git = new GitSource({ ...opts.git, dataDir, clock, log: log.child({ part: 'git' }) });
    persister = git;
    source = `git:${opts.git.url}`;
  } else if (opts.config) {
    persister = new FilePersister(opts.config);
    source = path.resolve(opts.config);
  } else {
    persister = new MemoryPersister();
    source = '(none)';
  }
  const gitSource = git;
  const configPath = opts.config ? path.resolve(opts.config) : undefined;
  const service = new ConfigServiceImpl({
    loop: theLoop,
    persister,
    log: log.child({ part: 'config' }),
    source,
    info: () =>
      gitSource
        ? gitSource.info()
        : { type: configPath ? 'file' : 'none', path: configPath ?? null },
  });

  const ctx: AppContext = {
    config: service,
    loop: theLoop,
    users,
    ottRouter,
    log,
    clock,
    services,
    planFor: (doc: ConfigDocument) => {
      // Validated as the file it would be written as (the current text edited in place), so
      // line numbers match the operator's file.
      const loaded = loadProposedText(formatConfigOver(service.current().text, elideDefaults(doc)));
      const p = theLoop.plan(loaded.desired);
      return { ...p, warnings: [...loaded.warnings, ...p.warnings] };
    },
  };
  const app = await buildApp(ctx);
  await app.ready();
  services.set(ADMIN_HANDLER_SERVICE, app.routing.bind(app));

  let watcher: FileWatcher | undefined;
  if (git) {
    git.attach(service);
    await git.init();
    await git.start();
  } else {
    watcher = configPath
      ? new FileWatcher({
          file: configPath,
          service,
          clock,
          log: log.child({ part: 'watch' }),
          ...(opts.watchDebounceMs !== undefined ? { debounceMs: opts.watchDebounceMs } : {}),
        })
      : undefined;
    if (watcher) {
      await watcher.refresh(true);
      await watcher.start();
    } else {
      await service.refresh(async () => ({ text: formatConfig({}), origin: 'empty' }));
    }
  }

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await watcher?.close();
      await git?.close();
      await service.idle();
      await theLoop.close();
      await plane.close();
      await app.close();
      gate.close();
      delivery.close();
      dataDirLock.release();
    })();
    return closing;
  };
  const running: RunningServer = { dataDirLock, service, loop: theLoop, close };
  if (git) running.git = git;
  if (watcher) running.watcher = watcher;
  return running;
}
