// `test` input: the built-in test-stream generator, an ffmpeg child (see test-args.ts).
import { ChildInput } from '../child.ts';
import type { InputContext, InputTransport } from '../types.ts';
import { testGeneratorArgs } from './args.ts';

export const FFMPEG = '/usr/bin/ffmpeg';

export function createTestInput(cfg: Record<string, unknown>, ctx: InputContext): InputTransport {
  return new ChildInput(FFMPEG, testGeneratorArgs(cfg, ctx.streamName), {}, ctx);
}
