// Local inputs with real peers: file (PCR-paced, looping), pipe (FIFO made by the stream, fed
// by ffmpeg), std (ffmpeg child with quoted arguments) and the test generator → /name/mpegts →
// ffprobe; close() leaves no FIFO or child behind.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import {
  ffprobe,
  httpFor,
  makeFixture,
  makeHost,
  openStream,
  playFixture,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir, 4);
const host = makeHost(dir);
const base = await httpFor(t, host.router);

const stream = (
  name: string,
  spec: Record<string, unknown>,
  wait = true,
): Promise<StreamInstance> =>
  openStream(t, host, { 'stream-name': name, ...spec }, wait ? 10_000 : undefined);

type Probed = Awaited<ReturnType<typeof ffprobe>>;
function expectStreams(
  t: Test,
  streams: Probed,
  video: string,
  audio: string,
  vpid: string,
  apid: string,
) {
  const v = streams.find((s) => s.codec_type === 'video');
  const a = streams.find((s) => s.codec_type === 'audio');
  t.equal(v?.codec_name, video, `${video} video`);
  t.equal(a?.codec_name, audio, `${audio} audio`);
  t.equal(v?.id, vpid, 'video PID');
  t.equal(a?.id, apid, 'audio PID');
}

t.test('file input, paced by PCR and looping', async (t) => {
  const s = await stream('file', { input: [{ type: 'file', 'file-path': fixture }] });
  expectStreams(t, await ffprobe(`${base}/file/mpegts`), 'h264', 'aac', '0x100', '0x101');
  const loops = () =>
    Number(
      (s.status()['inputs'] as Record<string, Record<string, unknown>>[])[0]!['transport']![
        'loops'
      ],
    );
  const l0 = loops();
  await waitFor(() => loops() > l0, 6000, 'a loop of the 4 s file');
  const started = Date.now();
  await waitFor(() => loops() > l0 + 1, 6000, 'the next loop');
  const took = Date.now() - started;
  t.ok(took > 3000 && took < 5500, `one loop of a 4 s file takes real time (${took} ms)`);
});

t.test('pipe input with a FIFO created under the data dir', async (t) => {
  const s = await stream('pipe', { input: [{ type: 'pipe' }] }, false);
  const fifo = join(dir, 'fifo', 'pipe-0.ts');
  await waitFor(() => existsSync(fifo), 3000, 'FIFO');
  playFixture(t, fixture, 'mpegts', fifo);
  await waitFor(() => s.state() === 'running', 8000, 'pipe running');
  expectStreams(t, await ffprobe(`${base}/pipe/mpegts`), 'h264', 'aac', '0x100', '0x101');
  await s.close();
  t.notOk(existsSync(fifo), 'FIFO removed on close');
});

t.test('std input: argv split like a shell, never through one', async (t) => {
  const s = await stream('std', {
    input: [
      {
        type: 'std',
        'std-cmd': '/usr/bin/ffmpeg',
        'std-args': `-hide_banner -loglevel error -re -stream_loop -1 -i '${fixture}' -map 0 -c copy -streamid 0:256 -streamid "1:257" -f mpegts pipe:1`,
        'std-environment-name': ['AV_LOG_FORCE_NOCOLOR'],
        'std-environment-value': ['1'],
      },
    ],
  });
  expectStreams(t, await ffprobe(`${base}/std/mpegts`), 'h264', 'aac', '0x100', '0x101');
  const pid = (s.status()['inputs'] as Record<string, Record<string, unknown>>[])[0]!['transport']![
    'pid'
  ] as number;
  t.ok(existsSync(`/proc/${pid}`), 'child running');
  await s.close();
  t.notOk(existsSync(`/proc/${pid}`), 'child gone after close');
});

t.test('test generator: H.264 + AAC with the record PIDs', async (t) => {
  const s = await stream('gen', {
    input: [
      {
        type: 'test',
        width: 320,
        height: 180,
        'video-bitrate': 400,
        'audio-enc': 1,
        'text-overlay': "sluice: it's a test",
        'pmt-pid': 100,
        'video-pid': 101,
        'audio-pid': 102,
        pnr: 7,
      },
    ],
  });
  expectStreams(t, await ffprobe(`${base}/gen/mpegts`), 'h264', 'aac', '0x65', '0x66');
  const prog = await waitFor(
    () => (s.status()['programs'] as { name?: string; provider?: string; pnr: number }[])[0],
    5000,
    'programme',
  );
  t.match(prog, { pnr: 7, name: 'gen', provider: 'sluice' }, 'SDT names the stream');
});
