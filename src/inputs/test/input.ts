// `test` input: the built-in test-stream generator, an ffmpeg child (see test-args.ts) of the
// binary `server.ffmpeg-path` names, read at each start of the child.

import type { InputContext, InputTransport } from '../../engine/input.ts';
import { ffmpegPath, ffmpegSpawnError } from '../../util/ffmpeg.ts';
import { ChildInput } from '../child.ts';
import { testGeneratorArgs } from './args.ts';

export function createTestInput(cfg: Record<string, unknown>, ctx: InputContext): InputTransport {
  return new ChildInput(ffmpegPath, testGeneratorArgs(cfg, ctx.streamName), {}, ctx, {
    spawnError: ffmpegSpawnError,
  });
}
