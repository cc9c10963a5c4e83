// A small H.264 + AAC MPEG-TS file made by ffmpeg from its lavfi sources (testsrc2 picture,
// sine tone), for tests and benches that need real encoder output but no particular stream
// layout (the OTT tests, which do, use testStreamArgs in ./ott.ts).
import { execFileSync } from 'node:child_process';

export interface LavfiTsOptions {
  /** Picture size, e.g. `320x240`. */
  size: string;
  seconds: number;
  /** Constant mux rate in bit/s (null packets fill up to it); default: ffmpeg's VBR mux. */
  muxrate?: number;
  /** Keyframe interval in frames (25 fps); default: the encoder's. */
  gop?: number;
  /** More output options, placed before `-f mpegts` (metadata, service ids, …). */
  extra?: string[];
}

/** Write the file (synchronously: a few seconds of ultrafast x264 at small sizes). */
export function makeLavfiTs(file: string, o: LavfiTsOptions): void {
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', `testsrc2=size=${o.size}:rate=25`],
    ...['-f', 'lavfi', '-i', 'sine=frequency=1000:sample_rate=48000'],
    ...['-t', String(o.seconds)],
    ...['-c:v', 'libx264', '-preset', 'ultrafast'],
    ...(o.gop ? ['-g', String(o.gop)] : []),
    ...['-c:a', 'aac'],
    ...(o.extra ?? []),
    ...['-f', 'mpegts'],
    ...(o.muxrate ? ['-muxrate', String(o.muxrate)] : []),
    file,
  ]);
}
