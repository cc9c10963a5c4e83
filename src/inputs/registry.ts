// Input types this build implements, by the record's `type`. Other types of spec 1 are reported
// as `not supported yet` in the stream status, and the stream uses its other inputs.

import type { InputFactory } from '../engine/input.ts';
import { DemuxerInput } from './demuxer/input.ts';
import { DvbInput } from './dvb/input.ts';
import { FileInput } from './file/input.ts';
import { HlsInput } from './hls/input.ts';
import { MuxerInput } from './muxer/input.ts';
import { PipeInput } from './pipe/input.ts';
import { PrompegInput } from './prompeg/input.ts';
import { Ps1Input } from './ps1/input.ts';
import { RistInput } from './rist/input.ts';
import { RtmpInput } from './rtmp/input.ts';
import { RtpInput } from './rtp/input.ts';
import { RtspInput } from './rtsp/input.ts';
import { SrtInput } from './srt/input.ts';
import { createStdInput } from './std/input.ts';
import { TcpInput } from './tcp/input.ts';
import { createTestInput } from './test/input.ts';
import { TranscoderInput } from './transcoder/input.ts';
import { UdpInput } from './udp/input.ts';

export const INPUT_FACTORIES: Record<string, InputFactory> = {
  udp: (cfg, ctx) => new UdpInput(cfg, ctx),
  rtp: (cfg, ctx) => new RtpInput(cfg, ctx),
  rtmp: (cfg, ctx) => new RtmpInput(cfg, ctx),
  rtsp: (cfg, ctx) => new RtspInput(cfg, ctx),
  tcp: (cfg, ctx) => new TcpInput(cfg, ctx),
  file: (cfg, ctx) => new FileInput(cfg, ctx),
  hls: (cfg, ctx) => new HlsInput(cfg, ctx),
  pipe: (cfg, ctx) => new PipeInput(cfg, ctx),
  rist: (cfg, ctx) => new RistInput(cfg, ctx),
  prompeg: (cfg, ctx) => new PrompegInput(cfg, ctx),
  ps1: (cfg, ctx) => new Ps1Input(cfg, ctx),
  std: createStdInput,
  srt: (cfg, ctx) => new SrtInput(cfg, ctx),
  test: createTestInput,
  demuxer: (cfg, ctx) => new DemuxerInput(cfg, ctx),
  muxer: (cfg, ctx) => new MuxerInput(cfg, ctx),
  transcoder: (cfg, ctx) => new TranscoderInput(cfg, ctx),
  dvb: (cfg, ctx) => new DvbInput(cfg, ctx),
};
