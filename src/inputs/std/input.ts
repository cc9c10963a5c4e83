// `std` input: runs `std-cmd` (absolute path) with `std-args` split into argv (never through a
// shell) and the environment built from the name/value arrays; reads the TS from its stdout.
import { isAbsolute } from 'node:path';
import { str, strList } from '../../config/spec-values.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';
import { ChildInput } from '../child.ts';
import { splitArgs } from './argv.ts';

export function createStdInput(cfg: Record<string, unknown>, ctx: InputContext): InputTransport {
  const cmd = str(cfg, 'std-cmd');
  if (!cmd || !isAbsolute(cmd))
    throw new Error(`std input: std-cmd must be an absolute path: "${cmd}"`);
  const names = strList(cfg, 'std-environment-name');
  const values = strList(cfg, 'std-environment-value');
  if (names.length !== values.length) {
    throw new Error('std input: std-environment-name and std-environment-value differ in length');
  }
  const env: Record<string, string> = {};
  names.forEach((n, i) => {
    env[n] = values[i]!;
  });
  return new ChildInput(cmd, splitArgs(str(cfg, 'std-args')), env, ctx);
}
