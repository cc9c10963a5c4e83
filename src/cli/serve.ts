// `sluice serve`: start the server from a config file or a git repository and run until
// SIGINT / SIGTERM, then close everything in reverse order.
import { parseArgs } from 'node:util';
import { createLogger } from '../log.ts';
import { type ServeOptions, startServer } from '../main.ts';
import { DEFAULT_DATA_DIR } from './help.ts';

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
  const http = server.service.current().doc['http-server'] as Record<string, unknown> | undefined;
  const port = (http?.['port'] as number | undefined) ?? 43971;
  const bind = (http?.['bind-address'] as string | undefined) ?? '0.0.0.0';
  const shown = bind === '0.0.0.0' ? '127.0.0.1' : bind;
  process.stderr.write(
    `sluice: serving ${opts.git ? `git ${opts.git.url}` : (opts.config ?? 'an empty config')}; ` +
      `admin API and OTT on http://${shown}:${port}/ (status: /data/status)\n`,
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
