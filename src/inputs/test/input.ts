// `test` input: the built-in test-stream generator, an ffmpeg child (see test-args.ts).

import type { InputContext, InputTransport } from '../../engine/input.ts';
import { ChildInput } from '../child.ts';
import { testGeneratorArgs } from './args.ts';

export const FFMPEG = '/usr/bin/ffmpeg';

export function createTestInput(cfg: Record<string, unknown>, ctx: InputContext): InputTransport {
  return new ChildInput(FFMPEG, testGeneratorArgs(cfg, ctx.streamName), {}, ctx);
}
