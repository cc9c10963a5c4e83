// `sluice serve`: start the server from a config file or a git repository and run until
// SIGINT / SIGTERM, then close everything in reverse order.
import { parseArgs } from 'node:util';
import { createLogger } from '../log.ts';
import { type RunningServer, type ServeOptions, startServer } from '../main.ts';
import type { ResourceStatusEntry } from '../reconciler/types.ts';
import { trackOwnClientSockets } from '../util/own-sockets.ts';
import { DEFAULT_DATA_DIR } from './help.ts';
import { formatIssues } from './issues.ts';

/** How long start-up waits for the first apply to report the listening address. */
const FIRST_APPLY_WAIT_MS = 10_000;
const FIRST_APPLY_POLL_MS = 50;
const MAX_PORT = 65535;

/** The admin API's listening address and a URL to reach it by, once it listens. */
function adminAddress(
  entry: ResourceStatusEntry | undefined,
): { addr: string; url: string } | undefined {
  const addr = entry?.status?.['http'];
  if (typeof addr !== 'string') return undefined;
  const [host, port] = [
    addr.slice(0, addr.lastIndexOf(':')),
    addr.slice(addr.lastIndexOf(':') + 1),
  ];
  const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return { addr, url: `http://${local}:${port}/` };
}

/** The listening address of the admin API, or the one line saying why it is not listening. */
function adminLine(entry: ResourceStatusEntry | undefined): string | undefined {
  const admin = adminAddress(entry);
  if (admin) {
    return `admin API and OTT listening on ${admin.addr} (${admin.url}) (status: /data/status)`;
  }
  // The error names the port and what moves it (the driver's message); /data/status is not
  // offered here: it is served on the port that is not listening.
  if (entry?.error) return `admin API not listening: ${entry.error} (retrying meanwhile)`;
  return undefined;
}

/**
 * What start-up says once the first apply has run: where the admin API listens, or why not,
 * and a line for each other listener that could not start (the EPG server).
 */
async function startupReport(
  server: RunningServer,
  label: string,
): Promise<{ where: string; more: string[] }> {
  const deadline = Date.now() + FIRST_APPLY_WAIT_MS;
  for (;;) {
    const st = server.loop.status();
    const http = st.resources.find((r) => r.kind === 'http-server');
    const refused = server.service.invalid();
    if (refused && !http) {
      process.stderr.write(`${formatIssues(label, refused.issues)}\n`);
      const why = refused.message.split('\n')[0];
      return {
        where: `nothing applied: the config is invalid (${why}); it applies once fixed`,
        more: [],
      };
    }
    const where = adminLine(http);
    if (where && st.lastResult) {
      const epg = st.resources.find((r) => r.kind === 'epg-server');
      return { where, more: epg?.error ? [`${epg.error} (retrying meanwhile)`] : [] };
    }
    if (Date.now() > deadline) {
      return { where: where ?? 'admin API not listening yet (still starting)', more: [] };
    }
    await new Promise((r) => setTimeout(r, FIRST_APPLY_POLL_MS));
  }
}

/** `--port` / `--epg-port`: a TCP port, 1..65535. */
function portOption(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > MAX_PORT) {
    throw new Error(`${flag} must be a port number from 1 to ${MAX_PORT}: ${value}`);
  }
  return n;
}

/** A second signal while closing means "now": give up on a clean close after this long. */
const CLOSE_TIMEOUT_MS = 10_000;

export async function serveCommand(argv: string[]): Promise<number> {
  // Before anything connects: no request this server sends, wherever a playlist or redirect
  // points it, is anonymous loopback to its own admin API, EPG server or gate.
  trackOwnClientSockets();
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      git: { type: 'string' },
      branch: { type: 'string' },
      path: { type: 'string' },
      poll: { type: 'string' },
      'data-dir': { type: 'string' },
      'log-level': { type: 'string' },
      port: { type: 'string' },
      'epg-port': { type: 'string' },
      node: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0) throw new Error(`unexpected argument: ${positionals[0]}`);
  if (values.config && values.git) throw new Error('give --config or --git, not both');
  if (!values.git && (values.branch || values.path || values.poll)) {
    throw new Error('--branch, --path and --poll go with --git');
  }
  const log = createLogger(values['log-level'] ? { level: values['log-level'] } : {});
  const opts: ServeOptions = { dataDir: values['data-dir'] ?? DEFAULT_DATA_DIR, log };
  const http = portOption('--port', values.port);
  const epg = portOption('--epg-port', values['epg-port']);
  if (http !== undefined || epg !== undefined) {
    opts.ports = {
      ...(http !== undefined ? { http } : {}),
      ...(epg !== undefined ? { epg } : {}),
    };
  }
  const node = values.node ?? process.env['SLUICE_NODE'];
  if (node !== undefined) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(node))
      throw new Error(`--node must be a node name (letters, digits, . _ -): ${node}`);
    opts.node = node;
  }
  if (values.config) opts.config = values.config;
  if (values.git) {
    const pollSec = values.poll === undefined ? undefined : Number(values.poll);
    if (pollSec !== undefined && !(Number.isFinite(pollSec) && pollSec > 0)) {
      throw new Error(`--poll must be a positive number of seconds: ${values.poll}`);
    }
    opts.git = { url: values.git };
    if (values.branch) opts.git.branch = values.branch;
    if (values.path) opts.git.path = values.path;
    if (pollSec !== undefined) opts.git.pollSec = pollSec;
  }

  const server = await startServer(opts);
  const { where, more } = await startupReport(server, opts.config ?? opts.git?.url ?? 'config');
  // A second server refused on this data dir names the address this one answers on.
  const admin = adminAddress(server.loop.status().resources.find((r) => r.kind === 'http-server'));
  if (admin) server.dataDirLock.describe({ admin: admin.url });
  process.stderr.write(
    `sluice: serving ${opts.git ? `git ${opts.git.url}` : (opts.config ?? 'an empty config')}; ` +
      `${where}\n`,
  );
  for (const line of more) process.stderr.write(`sluice: ${line}\n`);

  return await new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn({ signal }, 'second signal: exiting without a clean close');
        process.exit(1);
      }
      stopping = true;
      log.info({ signal }, 'stopping');
      const force = setTimeout(() => {
        log.error('clean close took too long; exiting');
        process.exit(1);
      }, CLOSE_TIMEOUT_MS);
      server.close().then(
        () => {
          clearTimeout(force);
          resolve(0);
        },
        (err: unknown) => {
          clearTimeout(force);
          log.error({ err }, 'close failed');
          resolve(1);
        },
      );
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
