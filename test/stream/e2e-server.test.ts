// End to end through the real server (`bin/sluice.js serve`): a config with a `test` input
// stream (ott-http 1, pause false) plays on /{name}/mpegts (ffprobe); a PATCH of the stream's
// input through the admin API restarts the generator with the new picture size (new child,
// ffprobe sees it); a DELETE removes the stream and leaves no child ffmpeg (checked in /proc).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { startServer, waitFor } from '../helpers/server.ts';
import { ffprobe } from '../helpers/stream-host.ts';

const input = (width: number, height: number) => ({
  type: 'test',
  width,
  height,
  'video-bitrate': 300,
  'enable-overlay': false,
});

/** Processes whose parent is `ppid`, with their command name (from /proc/<pid>/stat). */
function children(ppid: number): { pid: number; comm: string }[] {
  const out: { pid: number; comm: string }[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${d}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(rest[1]) === ppid && rest[0] !== 'Z') out.push({ pid: Number(d), comm });
  }
  return out;
}

t.test('test-input stream: play, PATCH its input, DELETE it', async (t) => {
  const srv = await startServer(t, {
    config: {
      stream: [
        { id: 1, 'stream-name': 'e2e', pause: false, 'ott-http': 1, input: [input(320, 240)] },
      ],
    },
  });
  const serverPid = srv.proc.pid!;
  const data = async () => {
    const r = await fetch(`${srv.url}/data/stream/1`);
    return r.ok ? ((await r.json()) as Record<string, unknown>) : undefined;
  };
  const childPid = (d: Record<string, unknown> | undefined) =>
    ((d?.['inputs'] as { transport?: { pid?: number } }[] | undefined)?.[0]?.transport?.pid ??
      null) as number | null;

  const first = await waitFor(
    'stream e2e running',
    async () => {
      const d = await data();
      return d?.['state'] === 'running' ? d : undefined;
    },
    30_000,
  );
  const pid1 = childPid(first);
  t.ok(pid1, `generator child ${pid1}`);
  t.ok(
    children(serverPid).some((c) => c.pid === pid1 && c.comm === 'ffmpeg'),
    'the generator is an ffmpeg child of the server',
  );
  const s1 = await ffprobe(`${srv.url}/e2e/mpegts`);
  const v1 = s1.find((s) => s.codec_type === 'video') as unknown as { width: number; id: string };
  t.equal(v1?.width, 320, 'ffprobe: 320 pixels wide');
  t.equal(v1?.id, '0x21', 'video on the record default PID 33');
  t.ok(
    s1.some((s) => s.codec_type === 'audio' && s.id === '0x22'),
    'audio on PID 34',
  );

  const patch = await fetch(`${srv.url}/config/stream/1`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ input: [input(352, 288)] }),
  });
  t.ok(patch.ok, `PATCH answered ${patch.status}`);
  const second = await waitFor(
    'the new input applied',
    async () => {
      const d = await data();
      const p = childPid(d);
      return d?.['state'] === 'running' && p && p !== pid1 ? d : undefined;
    },
    30_000,
  );
  const pid2 = childPid(second)!;
  t.not(pid2, pid1, `a new generator child ${pid2}`);
  t.notOk(
    children(serverPid).some((c) => c.pid === pid1),
    'the old generator is gone',
  );
  const v2 = await waitFor(
    'ffprobe shows the new size',
    async () => {
      const s = await ffprobe(`${srv.url}/e2e/mpegts`);
      const v = s.find((x) => x.codec_type === 'video') as unknown as { width: number } | undefined;
      return v?.width === 352 ? v : undefined;
    },
    20_000,
  );
  t.equal(v2.width, 352, 'ffprobe: 352 pixels wide after the PATCH');

  const del = await fetch(`${srv.url}/config/stream/1`, { method: 'DELETE' });
  t.ok(del.ok, `DELETE answered ${del.status}`);
  await waitFor(
    'stream gone from /data/stream',
    async () => ((await fetch(`${srv.url}/data/stream/1`)).status === 404 ? true : undefined),
    20_000,
  );
  await waitFor(
    'no ffmpeg child left',
    () => (children(serverPid).some((c) => c.comm === 'ffmpeg') ? undefined : true),
    5000,
  );
  t.notOk(existsSync(`/proc/${pid2}/stat`) && children(serverPid).some((c) => c.pid === pid2));
  t.same(
    children(serverPid).filter((c) => c.comm === 'ffmpeg'),
    [],
    'no child ffmpeg remains',
  );
  const mpegts = await fetch(`${srv.url}/e2e/mpegts`);
  t.equal(mpegts.status, 404, 'the HTTP-TS URL is gone');
});
