// A config that records one small test-pattern stream (`rec`, 1 s HLS-TS segments) into one
// storage, and the storage's status as `/data/dvr-storage-list` gives it: for the tests of what
// a second server may and may not write.
import { type ServerHandle, type Teardown, waitFor } from './server.ts';

/** Start-up of a stream and its first chunks on a busy 2-core machine. */
const RECORD_TIMEOUT_MS = 40_000;

export function recordingConfig(storeDir: string): Record<string, unknown> {
  return {
    'dvr-storage-list': {
      storage: [
        {
          id: 1,
          name: 'store',
          'dir-path': storeDir,
          'cleanup-interval-sec': 1,
          'disk-emergency-bytes': 1_048_576,
        },
      ],
    },
    stream: [
      {
        id: 1,
        'stream-name': 'rec',
        pause: false,
        'ott-hls': 1,
        'ott-segment-duration': 1,
        'dvr-storage': 1,
        input: [
          { type: 'test', width: 160, height: 90, 'video-bitrate': 100, 'enable-overlay': false },
        ],
      },
    ],
  };
}

export interface StorageStatus {
  state: string;
  message: string;
  streams: { name: string; 'archived-sec': number }[];
}

/** The storage's status on `srv`. */
export async function storageStatus(srv: ServerHandle): Promise<StorageStatus | undefined> {
  const r = await fetch(`${srv.url}/data/dvr-storage-list`, { signal: AbortSignal.timeout(5000) });
  return ((await r.json()) as StorageStatus[])[0];
}

/** Seconds of `rec` the storage holds (0 while its index is closed). */
export function archivedSec(s: StorageStatus | undefined): number {
  return s?.streams.find((x) => x.name === 'rec')?.['archived-sec'] ?? 0;
}

/** Wait until `srv` has archived more than `sec` seconds of `rec`; the seconds it has. */
export async function recordedBeyond(srv: ServerHandle, sec: number): Promise<number> {
  return waitFor(
    `more than ${sec} s of rec archived`,
    async () => {
      const now = archivedSec(await storageStatus(srv));
      return now > sec ? now : undefined;
    },
    RECORD_TIMEOUT_MS,
  );
}

/** SIGSTOP `srv`: frozen, it writes nothing, so whatever changes meanwhile is another
 *  process's doing. It is continued by the returned function, or on teardown if still there. */
export function freeze(t: Teardown, srv: ServerHandle): () => void {
  const pid = srv.proc.pid!;
  const alive = () => srv.proc.exitCode === null && srv.proc.signalCode === null;
  process.kill(pid, 'SIGSTOP');
  t.teardown(() => {
    if (alive()) process.kill(pid, 'SIGCONT');
  });
  return () => {
    if (alive()) process.kill(pid, 'SIGCONT');
  };
}
