// `sluice serve`: start the server from a config file or a git repository and run until
// SIGINT / SIGTERM, then close everything in reverse order.
import { parseArgs } from 'node:util';
import { createLogger } from '../log.ts';
import { type RunningServer, type ServeOptions, startServer } from '../main.ts';
import { DEFAULT_DATA_DIR } from './help.ts';
import { formatIssues } from './issues.ts';

/** How long start-up waits for the first apply to report the listening address. */
const FIRST_APPLY_WAIT_MS = 10_000;
const FIRST_APPLY_POLL_MS = 50;

/** Where the admin API listens, as the http-server driver reports it after the first apply. */
async function listenAddress(server: RunningServer, label: string): Promise<string> {
  const deadline = Date.now() + FIRST_APPLY_WAIT_MS;
  for (;;) {
    const entry = server.loop.status().resources.find((r) => r.kind === 'http-server');
    const addr = entry?.status?.['http'];
    if (typeof addr === 'string') {
      const [host, port] = [
        addr.slice(0, addr.lastIndexOf(':')),
        addr.slice(addr.lastIndexOf(':') + 1),
      ];
      const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
      return `admin API and OTT listening on ${addr} (http://${local}:${port}/)`;
    }
    if (entry?.error) return `admin API not listening: ${entry.error}`;
    const refused = server.service.invalid();
    if (refused && !entry) {
      process.stderr.write(`${formatIssues(label, refused.issues)}\n`);
      const why = refused.message.split('\n')[0];
      return `nothing applied: the config is invalid (${why}); it applies once fixed`;
    }
    if (Date.now() > deadline) return 'admin API not listening yet (see /data/status)';
    await new Promise((r) => setTimeout(r, FIRST_APPLY_POLL_MS));
  }
}

/** A second signal while closing means "now": give up on a clean close after this long. */
const CLOSE_TIMEOUT_MS = 10_000;

export async function serveCommand(argv: string[]): Promise<number> {
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
  const where = await listenAddress(server, opts.config ?? opts.git?.url ?? 'config');
  process.stderr.write(
    `sluice: serving ${opts.git ? `git ${opts.git.url}` : (opts.config ?? 'an empty config')}; ` +
      `${where} (status: /data/status)\n`,
  );

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
