// The real server recording two streams (1 s and 4 s segments) into a storage on an 8 MiB
// tmpfs held under pressure by size cleanup: the disk-full alarm clears while recording goes on
// and their depths in seconds stay within a tolerance of each other (issue 36, items 10, 11).
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startServer, tempDir, waitFor } from '../helpers/server.ts';

/** Start-up, the fill to max-usage and the first trims on a busy 2-core machine. */
const PRESSURE_TIMEOUT_MS = 90_000;
/** Status samples taken once size cleanup runs, one after each trim. */
const SAMPLES = 6;
/** Two 4 s chunks: the grain of the slow stream, plus one for the streams' start-up offset. */
const TOLERANCE_SEC = 8;

interface Status {
  'disk-full-alarm': boolean;
  'used-percent': number;
  'last-cleanup': { 'pressure-trim-sec-ago': number | null };
  streams: { name: string; 'archived-sec': number }[];
}

const stream = (id: number, name: string, seg: number, kbit: number) => ({
  id,
  'stream-name': name,
  pause: false,
  'ott-hls': 1,
  'ott-segment-duration': seg,
  'dvr-storage': 1,
  input: [{ type: 'test', width: 160, height: 90, 'video-bitrate': kbit, 'enable-overlay': false }],
});

t.test('under disk pressure the alarm clears while two streams record, depths equal', async (t) => {
  const mnt = join(await tempDir(t, 'sluice-dvr-pressure-'), 'mnt');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
  t.teardown(() => execFileSync('umount', ['-l', mnt]));
  const srv = await startServer(t, {
    config: {
      'dvr-storage-list': {
        storage: [
          {
            id: 1,
            name: 'small',
            'dir-path': join(mnt, 'dvr'),
            'max-usage': 65,
            'alarm-disk-full-hysteresis': 3,
            'disk-pressure-grace-sec': 3,
            // Five seconds of writes between passes are more than 3 % of this disk:
            // judged on the probe before the trim, the alarm would never clear.
            'cleanup-interval-sec': 5,
            'disk-emergency-bytes': 262_144,
          },
        ],
      },
      stream: [stream(1, 'fast', 1, 600), stream(2, 'slow', 4, 400)],
    },
  });
  const status = async () => {
    const r = await fetch(`${srv.url}/data/dvr-storage-list`, {
      signal: AbortSignal.timeout(5000),
    });
    return ((await r.json()) as Status[])[0]!;
  };
  const depth = (s: Status, name: string) =>
    s.streams.find((x) => x.name === name)?.['archived-sec'] ?? 0;
  await waitFor(
    'size cleanup on the tmpfs',
    async () =>
      (await status())['last-cleanup']['pressure-trim-sec-ago'] !== null ? 1 : undefined,
    PRESSURE_TIMEOUT_MS,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${srv.output()}`);
  });
  let cleared = false;
  for (let i = 0; i < SAMPLES; i++) {
    // Right after a trim (the pass after it would read a second ago or more).
    const s = await waitFor(
      'the next size cleanup',
      async () => {
        const s = await status();
        const ago = s['last-cleanup']['pressure-trim-sec-ago'];
        return ago !== null && ago < 1 ? s : undefined;
      },
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${srv.output().slice(-3000)}`);
    });
    if (!s['disk-full-alarm']) cleared = true;
    const fast = depth(s, 'fast');
    const slow = depth(s, 'slow');
    t.ok(
      Math.abs(fast - slow) <= TOLERANCE_SEC,
      `fast ${fast.toFixed(1)} s, slow ${slow.toFixed(1)} s at ${s['used-percent']} %`,
    );
    // Out of this second, so the next sample is the next trim.
    await waitFor(
      'the second after the trim',
      async () =>
        ((await status())['last-cleanup']['pressure-trim-sec-ago'] ?? 0) >= 1 ? 1 : undefined,
      5_000,
    );
  }
  t.ok(cleared, 'the disk-full alarm cleared while both recorded');
});
