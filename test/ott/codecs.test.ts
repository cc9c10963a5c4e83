// Every codec the CMAF remux handles, checked by ffmpeg: HEVC video (hvcC), AC-3 (dac3) and
// MPEG-1 Layer II (mp4a, OTI 0x6B) audio decode cleanly from init.mp4 + a media segment, and
// the CODECS strings match the stream.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import pino from 'pino';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, type TestStreamOptions, TinyBus, tempDir } from '../helpers/ott.ts';

function decodeErrors(file: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('ffmpeg', ['-v', 'error', '-i', file, '-f', 'null', '-'], (err, _o, e) =>
      err ? reject(err) : resolve(e),
    ),
  );
}

const cases: { name: string; opts: TestStreamOptions; video: RegExp; audio: RegExp }[] = [
  {
    name: 'HEVC + AC-3',
    opts: { seconds: 4, video: 'hevc', audio: 'ac3' },
    video: /^hvc1\.1\.6\.L\d+/,
    audio: /^ac-3$/,
  },
  {
    name: 'H.264 + MPEG-1 Layer II',
    opts: { seconds: 4, audio: 'mp2' },
    video: /^avc1\./,
    audio: /^mp4a\.6B$/,
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const tmp = tempDir();
    t.teardown(tmp.remove);
    const ts = await makeTestStream(`${tmp.dir}/in.ts`, { ...c.opts, gop: 25 });
    const bus = new TinyBus();
    const svc = createOttService({
      name: 'x',
      spec: { 'ott-hls': 2, 'ott-segment-duration': 1 },
      bus,
      clock: new ManualClock(),
      log: pino({ level: 'silent' }),
    }) as StreamOttService;
    t.teardown(() => svc.close());
    bus.push(ts);
    const [video, audio] = svc.packager.renditions;
    t.match(video?.track.codec, c.video, `video CODECS ${video?.track.codec}`);
    t.match(audio?.track.codec, c.audio, `audio CODECS ${audio?.track.codec}`);
    for (const r of [video!, audio!]) {
      const seg = r.store.live()[1]!;
      const file = `${tmp.dir}/${r.id}.mp4`;
      await writeFile(file, Buffer.concat([r.store.init!, r.store.get(seg.uri)!]));
      t.equal(await decodeErrors(file), '', `${r.id} (${r.track.codec}) decodes cleanly`);
    }
  });
}
