// Archived WebVTT (teletext subtitles through the OTT part) served in archive mode, and the
// /data/dvrstat markers that come with recording: subtitles, scrambling switch, index rebuild.
import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { statfsProbe } from '../../src/dvr/disk.ts';
import { TS_TRACK } from '../../src/dvr/index-db.ts';
import { readStorage } from '../../src/dvr/settings.ts';
import { ArchiveStorage } from '../../src/dvr/storage.ts';
import { silentLogger } from '../../src/log.ts';
import { createOttService } from '../../src/ott/index.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { applied } from '../helpers/desired.ts';
import { makeTestStream, startOttServer, TinyBus } from '../helpers/ott.ts';
import { BOX, END_BOX, muxTeletext } from '../helpers/teletext.ts';
import { feedPaced, hookHost, recordingHost, tempDir } from './helpers.ts';

const PID = 0x130;
const SUB = `t${PID}p888`;
const SECONDS = 10;
t.test('subtitles and scrambling: recorded, served in archive mode, marked', async (t) => {
  const dir = tempDir(t);
  const { clock, storage, host } = await recordingHost(t, dir);
  const spec = {
    'stream-name': 's',
    'ott-hls': 3,
    'ott-webvtt': true,
    'ott-segment-duration': 2,
    'dvr-storage': 1,
  };
  let scrambled: number[] = [];
  const bus = new TinyBus();
  const svc = new ArchivedOttService(
    createOttService({ name: 's', spec, bus, clock, log: silentLogger }),
    {
      ...hookHost(host),
      name: 's',
      spec: () => spec,
      state: () => 'running',
      scrambled: () => scrambled,
    },
  );
  t.teardown(() => svc.close());
  const video = await makeTestStream(join(dir, 'v.ts'), { seconds: SECONDS, gop: 25 });
  const { ts } = muxTeletext(video, {
    pid: PID,
    magazine: 8,
    pageByte: 0x88,
    language: 'eng',
    pages: [
      { at: 1, rows: [{ row: 22, text: `${BOX}Archived words${END_BOX}` }] },
      { at: 5, rows: [] },
    ],
  });
  await feedPaced(bus, clock, ts.subarray(0, Math.floor(ts.length / 2 / 188) * 188), SECONDS / 2);
  scrambled = [256];
  svc.sync();
  scrambled = [];
  svc.sync();
  await feedPaced(bus, clock, ts.subarray(Math.floor(ts.length / 2 / 188) * 188), SECONDS / 2);
  await svc.recorder!.settle();
  const index = storage.index!;
  const vttRows = index.range('s', SUB, 0, Number.MAX_SAFE_INTEGER);
  t.ok(vttRows.length >= 3, `${vttRows.length} .vtt chunks indexed`);
  t.ok(
    vttRows.every((r) => r.path.endsWith('.vtt')),
    '.vtt files beside the chunks',
  );
  const kinds = index.markers(0, Number.MAX_SAFE_INTEGER, 's').map((m) => `${m.kind}: ${m.detail}`);
  t.ok(kinds.includes(`subtitles: subtitle track ${SUB} recorded`), 'subtitle activity marker');
  t.ok(kinds.includes('scrambling: scrambled PIDs: 256'), 'scrambling on');
  t.ok(kinds.includes('scrambling: clear: no scrambled PID'), 'scrambling off');

  const { app, base } = await startOttServer(new Map([['s', svc]]));
  t.teardown(() => app.close());
  const get = async (p: string) => {
    const r = await fetch(`${base}/s/${p}`);
    t.equal(r.status, 200, `GET ${p}`);
    return r.text();
  };
  const master = await get('index.m3u8?t=0');
  t.match(master, new RegExp(`#EXT-X-MEDIA:TYPE=SUBTITLES,.*URI="${SUB}/index\\.m3u8\\?t=`));
  t.match(master, /#EXT-X-STREAM-INF:.*SUBTITLES="subs"\nts\.m3u8\?t=/);
  const subUri = /URI="([^"]+)"/.exec(master)![1]!;
  const subs = await get(subUri);
  t.match(subs, /#EXT-X-PLAYLIST-TYPE:VOD/);
  t.match(subs, /#EXT-X-ENDLIST\n$/);
  t.notMatch(subs, /EXT-X-MAP/, 'no init map for WebVTT');
  const vtts = subs.split('\n').filter((l) => l.endsWith('.vtt'));
  t.equal(vtts.length, vttRows.length, 'every archived .vtt listed');
  const bodies = await Promise.all(vtts.map((u) => get(`${SUB}/${u}`)));
  for (const b of bodies) t.match(b, /^WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:\d+,LOCAL:00:00:00\.000/);
  t.ok(
    bodies.some((b) => b.includes('Archived words')),
    'the subtitle text is in the archive',
  );
  const ts2 = await get(/ts\.m3u8\?[^\n]+/.exec(master)![0]);
  t.equal(
    (ts2.match(/#EXTINF/g) ?? []).length,
    index.range('s', TS_TRACK, 0, Number.MAX_SAFE_INTEGER).length,
  );
  const cmaf = await get('cmaf.m3u8?t=0');
  t.match(cmaf, /TYPE=SUBTITLES/, 'fMP4 master carries the subtitles too');
  const mpd = await get('index.mpd?t=0');
  t.match(mpd, /mimeType="text\/vtt"/, 'DASH text AdaptationSet');
  const dUrl = new RegExp(`media="(${SUB}/dvr-i\\d+/d\\d+\\.vtt)"`).exec(mpd)?.[1];
  t.ok(dUrl, 'DASH lists the d-form .vtt');
  const dBody = await get(dUrl!);
  t.match(dBody, /^WEBVTT/);
  t.notMatch(dBody, /X-TIMESTAMP-MAP/, 'DASH drops X-TIMESTAMP-MAP');
  const gone = await fetch(`${base}/s/${SUB}/dvr-i1/999999.vtt`);
  t.equal(gone.status, 404, 'unknown .vtt: 404');
});

t.test('index rebuild at start-up: rows without a file go, marker written', async (t) => {
  const dir = tempDir(t);
  const clock = new ManualClock(Date.UTC(2026, 2, 1, 10, 0, 0));
  const make = () =>
    new ArchiveStorage(
      readStorage(
        applied('storage', '1', { id: 1, name: 'disk', 'dir-path': join(dir, 'store') }).spec,
      ),
      {
        clock,
        log: silentLogger,
        probe: statfsProbe,
      },
    );
  const first = make();
  await first.start();
  const { addRun } = await import('./helpers.ts');
  const rows = addRun(first, 'x', clock.now() - 60_000, 10);
  await first.close();
  // The newest file vanished while the server was down (e.g. a power cut before the rename
  // reached the disk).
  unlinkSync(join(dir, 'store', rows[9]!.path));
  const second = make();
  t.teardown(() => second.close());
  await second.start();
  const index = second.index!;
  t.equal(index.range('x', TS_TRACK, 0, Number.MAX_SAFE_INTEGER).length, 9, 'dangling row gone');
  t.equal(second.totals().get('x')?.chunks, 9, 'totals follow');
  const marks = index
    .markers(0, Number.MAX_SAFE_INTEGER, 'x')
    .filter((m) => m.kind === 'index-rebuild');
  t.equal(marks.length, 1);
  t.equal(marks[0]?.detail, 'checked 10, removed 1 rows without a file');
});
