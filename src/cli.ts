// The `sluice` command line: serve, reconcile --plan, validate, fmt. Each command returns its
// exit code; bin/sluice.js sets process.exitCode from it.
import { fmtCommand } from './cli/fmt.ts';
import { HELP, USAGE } from './cli/help.ts';
import { reconcileCommand } from './cli/reconcile.ts';
import { serveCommand } from './cli/serve.ts';
import { validateCommand } from './cli/validate.ts';

type Command = (argv: string[]) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  reconcile: reconcileCommand,
  validate: validateCommand,
  fmt: fmtCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? rest[0] : undefined;
    process.stdout.write(`${(topic && HELP[topic]) || USAGE}\n`);
    return name === undefined ? 1 : 0;
  }
  if (name === '--version' || name === '-V') {
    const { createRequire } = await import('node:module');
    const pkg = createRequire(import.meta.url)('../package.json') as { version: string };
    process.stdout.write(`sluice ${pkg.version}\n`);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`sluice: unknown command "${name}"\n\n${USAGE}\n`);
    return 1;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${HELP[name]}\n`);
    return 0;
  }
  try {
    return await command(rest);
  } catch (err) {
    process.stderr.write(`sluice ${name}: ${(err as Error).message}\n`);
    return 1;
  }
}
