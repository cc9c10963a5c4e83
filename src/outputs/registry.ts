// Output types this build implements, by the record's `type`. Other types are reported as
// `not supported yet` in the stream's status; the stream runs without them.
import type { OutputFactory } from '../engine/output.ts';
import { PrompegOutput } from './prompeg/output.ts';
import { Ps1Output } from './ps1/output.ts';
import { RistOutput } from './rist/output.ts';
import { SrtOutput } from './srt/output.ts';
import { DatagramOutput } from './udp/output.ts';

export const OUTPUT_FACTORIES: Readonly<Record<string, OutputFactory>> = {
  udp: (cfg, ctx) => new DatagramOutput(cfg, ctx),
  rtp: (cfg, ctx) => new DatagramOutput(cfg, ctx),
  rist: (cfg, ctx) => new RistOutput(cfg, ctx),
  srt: (cfg, ctx) => new SrtOutput(cfg, ctx),
  prompeg: (cfg, ctx) => new PrompegOutput(cfg, ctx),
  ps1: (cfg, ctx) => new Ps1Output(cfg, ctx),
};
