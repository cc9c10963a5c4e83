// A live feed for the benches: an H.264 + AAC MPEG-TS file at a constant video rate
// (16 s unless asked, 2 s GOPs), and ffmpeg playing it in a loop at its own pace into a UDP port.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';

/** Write `file`: `size` test picture at `kbps` constant video rate, 96 kbit/s AAC. */
export function makeFeedFile(file: string, kbps: number, size: string, seconds = 16): void {
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=25:duration=${seconds}`],
    ...['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds}`],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'],
    ...['-b:v', `${kbps}k`, '-minrate', `${kbps}k`, '-maxrate', `${kbps}k`],
    ...['-bufsize', `${kbps}k`, '-x264-params', 'nal-hrd=cbr:force-cfr=1'],
    ...['-g', '50', '-keyint_min', '50', '-sc_threshold', '0'],
    ...['-c:a', 'aac', '-b:a', '96k', '-f', 'mpegts', file],
  ]);
}

/** ffmpeg playing `file` in a loop at its own pace into UDP `port` on loopback. */
export function feedUdp(file: string, port: number): ChildProcess {
  return spawn(
    'ffmpeg',
    [
      ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', file],
      ...['-map', '0', '-c', 'copy', '-f', 'mpegts', `udp://127.0.0.1:${port}?pkt_size=1316`],
    ],
    { stdio: 'ignore' },
  );
}
