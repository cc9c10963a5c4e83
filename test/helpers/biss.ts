// BISS fixtures: a two-programme MPTS made by ffmpeg (101: H.264 + AAC on 0x100/0x101, 102:
// H.264 + AAC on 0x102/0x103, PMTs on 0x1000/0x1001), scrambled with libdvbcsa through the
// façade's bissScramble, and VLC's own DVB-CSA (`--ts-csa-ck`) as a second descrambler.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const P101 = { pnr: 101, pids: [0x100, 0x101] };
export const P102 = { pnr: 102, pids: [0x102, 0x103] };

/** Writes the clear MPTS (synchronously: a couple of seconds of ultrafast x264 at 160x120). */
export function makeTwoProgrammeTs(file: string, seconds = 2): Buffer {
  const lavfi = (freq: number) => [
    ...['-f', 'lavfi', '-i', `testsrc2=size=160x120:rate=25:duration=${seconds}`],
    ...['-f', 'lavfi', '-i', `sine=frequency=${freq}:sample_rate=48000:duration=${seconds}`],
  ];
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...lavfi(500),
    ...lavfi(700),
    ...['-map', '0', '-map', '1', '-map', '2', '-map', '3'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-c:a', 'aac'],
    ...['-program', 'program_num=101:title=One:st=0:st=1'],
    ...['-program', 'program_num=102:title=Two:st=2:st=3'],
    ...['-f', 'mpegts', file],
  ]);
  return readFileSync(file);
}

/** Whether VLC's command-line player is installed (scripts/setup installs it). */
export function haveVlc(): boolean {
  // Not `cvlc --version`: VLC refuses root even for that.
  return spawnSync('sh', ['-c', 'command -v cvlc'], { stdio: 'ignore' }).status === 0;
}

/**
 * VLC's descrambling of `input` with the control word `cw` (16 hex digits), remuxed by VLC into
 * `<dir>/vlc/out.ts` (VLC refuses to run as root, so it runs as `nobody` there). Returns the
 * output file.
 */
export function vlcDescramble(dir: string, input: string, cw: string): string {
  const out = join(dir, 'vlc');
  mkdirSync(out, { recursive: true });
  chmodSync(dir, 0o755);
  chmodSync(out, 0o777);
  chmodSync(input, 0o644);
  const file = join(out, 'out.ts');
  const argv = [
    ...['-I', 'dummy', `--ts-csa-ck=${cw}`, input],
    ...['--sout', `#std{access=file,mux=ts,dst=${file}}`, 'vlc://quit'],
  ];
  const asRoot = process.getuid?.() === 0;
  const r = spawnSync(
    asRoot ? 'runuser' : 'cvlc',
    asRoot ? ['-u', 'nobody', '--', 'cvlc', ...argv] : argv,
    {
      timeout: 60_000,
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`cvlc: ${r.status} ${r.stderr}`);
  return file;
}

/** The MD5 of every decoded frame of one stream (`map`: ffmpeg's -map, e.g. `0:p:101:v:0`). */
export function frameHashes(file: string, map: string): string[] {
  const r = spawnSync('ffmpeg', ['-v', 'quiet', '-i', file, '-map', map, '-f', 'framemd5', '-'], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return r.stdout
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split(',').pop()!.trim());
}
