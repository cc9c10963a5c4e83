// PSI written by a real peer: ffmpeg muxes a second of test picture and tone; its PAT, PMT and
// SDT pass the CRC check, parse to the stream ffmpeg was asked for, and build back byte for byte.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  PAT_PID,
  payloadOffset,
  pid,
  pusi,
  SDT_PID,
  TS_PACKET_SIZE,
} from '../../src/mpegts/packet.ts';
import {
  buildPat,
  buildPmt,
  parsePat,
  parsePmt,
  patPmtPids,
  SECTION_PREFIX_SIZE,
  sectionCrcOk,
  sectionLength,
} from '../../src/mpegts/psi.ts';
import { buildSdt, parseSdt } from '../../src/mpegts/sdt.ts';
import { STREAM_TYPE_MPEG1_AUDIO, STREAM_TYPE_MPEG2_VIDEO } from '../../src/mpegts/stream-type.ts';

/** The first section on `wanted` that starts and ends in one packet. */
function firstSection(ts: Buffer, wanted: number): Buffer | undefined {
  for (let o = 0; o + TS_PACKET_SIZE <= ts.length; o += TS_PACKET_SIZE) {
    if (pid(ts, o) !== wanted || !pusi(ts, o)) continue;
    const at = o + payloadOffset(ts, o) + 1 + ts[o + payloadOffset(ts, o)]!;
    const end = at + SECTION_PREFIX_SIZE + sectionLength(ts, at);
    if (end <= o + TS_PACKET_SIZE) return Buffer.from(ts.subarray(at, end));
  }
  return undefined;
}

t.test('ffmpeg’s PAT, PMT and SDT', async (t) => {
  const file = join(t.testdir(), 'lavfi.ts');
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', 'testsrc=d=1:size=160x120'],
    ...['-f', 'lavfi', '-i', 'sine=d=1'],
    ...['-c:v', 'mpeg2video', '-c:a', 'mp2'],
    ...['-metadata', 'service_provider=Test', '-metadata', 'service_name=Sluice'],
    ...['-mpegts_transport_stream_id', '0x0abc', '-mpegts_service_id', '0x0102'],
    ...['-mpegts_pmt_start_pid', '0x0200', '-mpegts_start_pid', '0x0300'],
    ...['-f', 'mpegts', file],
  ]);
  const ts = readFileSync(file);
  t.ok(ts.length > 0 && ts.length % TS_PACKET_SIZE === 0, 'whole packets');

  const patSection = firstSection(ts, PAT_PID)!;
  t.ok(sectionCrcOk(patSection), 'PAT CRC');
  const pat = parsePat(patSection);
  t.equal(pat.transportStreamId, 0x0abc);
  t.same(pat.programs, [{ programNumber: 0x0102, pid: 0x0200 }]);
  t.same([...patPmtPids(pat)], [0x0200]);
  t.same(buildPat(pat), patSection, 'PAT built back byte for byte');

  const pmtSection = firstSection(ts, 0x0200)!;
  t.ok(sectionCrcOk(pmtSection), 'PMT CRC');
  const pmt = parsePmt(pmtSection);
  t.equal(pmt.programNumber, 0x0102);
  t.equal(pmt.pcrPid, 0x0300);
  t.same(
    pmt.streams.map((s) => [s.streamType, s.pid]),
    [
      [STREAM_TYPE_MPEG2_VIDEO, 0x0300],
      [STREAM_TYPE_MPEG1_AUDIO, 0x0301],
    ],
  );
  t.same(buildPmt(pmt), pmtSection, 'PMT built back byte for byte');

  const sdtSection = firstSection(ts, SDT_PID)!;
  t.ok(sectionCrcOk(sdtSection), 'SDT CRC');
  const sdt = parseSdt(sdtSection);
  t.equal(sdt.transportStreamId, 0x0abc);
  t.same(
    sdt.services.map((s) => s.serviceId),
    [0x0102],
  );
  t.same(buildSdt(sdt), sdtSection, 'SDT built back byte for byte');
});
