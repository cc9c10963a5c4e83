// Audio-only and video-only (`stream-type` 1 and 2; src/mpegts/component-filter.ts): a real
// ffmpeg H.264 + AAC file filtered both ways, read back by ffprobe — only the kept kind is
// there, the PMT names only it, and an audio-only programme keeps its clock (the PCR rides on
// the video PID in ffmpeg's files: its PCRs stay as adaptation-only packets).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ComponentFilter, componentKind } from '../../src/mpegts/component-filter.ts';
import { AF_PCR, hasPayload, pid, TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { makeLavfiTs } from '../helpers/ffmpeg.ts';

const dir = mkdtempSync(join(tmpdir(), 'sluice-components-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const source = join(dir, 'av.ts');
makeLavfiTs(source, { size: '160x90', seconds: 2 });
const data = readFileSync(source);

function probe(file: string): { codec_type: string; codec_name: string }[] {
  const out = execFileSync('ffprobe', [
    ...['-v', 'error', '-show_entries', 'stream=codec_type,codec_name', '-of', 'json', file],
  ]);
  return (JSON.parse(out.toString()) as { streams: { codec_type: string; codec_name: string }[] })
    .streams;
}

/** Run the filter over the file in pieces of `chunk` packets, as the stream's batches come. */
function filtered(keep: 'audio' | 'video', chunk = 7): Buffer {
  const f = new ComponentFilter(keep);
  const parts: Buffer[] = [];
  for (let o = 0; o < data.length; o += chunk * TS_PACKET_SIZE)
    parts.push(Buffer.from(f.push(data.subarray(o, o + chunk * TS_PACKET_SIZE))));
  return Buffer.concat(parts);
}

t.test('the source has both', async (t) => {
  t.same(
    probe(source)
      .map((s) => s.codec_type)
      .sort(),
    ['audio', 'video'],
  );
});

t.test('audio only: the video is gone, its PCRs kept', async (t) => {
  const out = filtered('audio');
  const file = join(dir, 'a.ts');
  writeFileSync(file, out);
  t.same(probe(file), [{ codec_type: 'audio', codec_name: 'aac' }]);
  // ffmpeg puts the PCR on the video PID (0x100): only adaptation-only PCR packets remain there.
  let pcrPackets = 0;
  for (let o = 0; o < out.length; o += TS_PACKET_SIZE) {
    if (pid(out, o) !== 0x100) continue;
    t.notOk(hasPayload(out, o), 'no video payload');
    if ((out[o + 5]! & AF_PCR) !== 0) pcrPackets++;
  }
  t.ok(pcrPackets > 10, `${pcrPackets} PCR packets kept on the video PID`);
  t.ok(out.length < data.length / 2, 'most of the bytes were the video');
});

t.test('video only: the audio is gone', async (t) => {
  const file = join(dir, 'v.ts');
  writeFileSync(file, filtered('video', 1));
  t.same(probe(file), [{ codec_type: 'video', codec_name: 'h264' }]);
});

t.test('componentKind: stream types and the DVB audio descriptors', async (t) => {
  t.equal(componentKind(0x1b, Buffer.alloc(0)), 'video');
  t.equal(componentKind(0x24, Buffer.alloc(0)), 'video');
  t.equal(componentKind(0x0f, Buffer.alloc(0)), 'audio');
  t.equal(componentKind(0x03, Buffer.alloc(0)), 'audio');
  t.equal(componentKind(0x06, Buffer.from([0x6a, 0x01, 0x00])), 'audio', 'private PES with AC-3');
  t.equal(componentKind(0x06, Buffer.from([0x59, 0x00])), 'other', 'DVB subtitles');
  t.equal(componentKind(0x06, Buffer.alloc(0)), 'other');
});
