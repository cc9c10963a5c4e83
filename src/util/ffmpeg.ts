// Which ffmpeg binary the server's children run (`server.ffmpeg-path`, docs/transcoder.md), and
// a failed start of one in words an operator acts on: the package to install, the setting.

/** Where Debian's ffmpeg package puts it; the setting's default. */
export const DEFAULT_FFMPEG_PATH = '/usr/bin/ffmpeg';

/** One value for the process: every spawn reads it at its start, so a change applies to the
 *  next start of each child (the `server` driver sets it). */
let current = DEFAULT_FFMPEG_PATH;

export function ffmpegPath(): string {
  return current;
}

export function setFfmpegPath(path: string): void {
  current = path || DEFAULT_FFMPEG_PATH;
}

/** A spawn of ffmpeg that failed (Node says only `spawn /usr/bin/ffmpeg EACCES`), as what is
 *  wrong, where, and what to do. */
export function ffmpegSpawnError(err: Error, bin: string): string {
  const code = (err as NodeJS.ErrnoException).code;
  const fix =
    'install the ffmpeg package (apt-get install ffmpeg) or set server.ffmpeg-path to its binary';
  if (code === 'ENOENT') return `cannot run ffmpeg: ${bin} does not exist; ${fix}`;
  if (code === 'EACCES') {
    return `cannot run ffmpeg: ${bin} is not executable (permission denied); ${fix}`;
  }
  return `cannot run ffmpeg (${bin}): ${err.message}; ${fix}`;
}
