// RtpTimeline: 32-bit RTP time unwrapped, tracks aligned by RTP-Info, by RTCP sender reports
// (a track placed wrongly by first-packet alignment is corrected once), else by first packets.
import t from 'tap';
import { RtpTimeline } from '../../src/protocols/rtp/timeline.ts';

t.test('unwrap past 2^32', async (t) => {
  const tl = new RtpTimeline();
  const v = tl.addTrack(90000);
  t.equal(tl.time(v, 0xffffff00, 0), 0);
  t.equal(tl.time(v, 0x100, 40), 0x200);
  t.equal(
    tl.time(v, 0xfffffff0, 80),
    0x200 - 0x110,
    'a step back across the wrap stays a step back',
  );
});

t.test('RTP-Info aligns every track at rtptime', async (t) => {
  const tl = new RtpTimeline();
  const v = tl.addTrack(90000, 1000);
  const a = tl.addTrack(48000, 500);
  t.ok(tl.useRtpInfo());
  t.equal(tl.time(v, 1000 + 9000, 0), 9000, 'video 100 ms in');
  t.equal(tl.time(a, 500 + 4800, 999), 4800, 'audio 100 ms in, whatever the arrival');
  const partial = new RtpTimeline();
  partial.addTrack(90000, 1);
  partial.addTrack(48000);
  t.notOk(partial.useRtpInfo(), 'RTP-Info naming some tracks is not used');
});

t.test('first-packet alignment, corrected by sender reports', async (t) => {
  const tl = new RtpTimeline();
  const v = tl.addTrack(90000);
  const a = tl.addTrack(48000);
  t.notOk(tl.useRtpInfo());
  t.equal(tl.time(v, 50_000, 1000), 0);
  // Audio's first packet arrives 200 ms later: placed at 0.2 s.
  t.equal(tl.time(a, 7_000, 1200), 9600);
  // Sender reports: video RTP 50 000 and audio RTP 7 000 are the same NTP instant (the
  // audio was really captured with the video's first frame).
  tl.senderReport(v, 3_900_000_000, 0, 50_000);
  t.equal(tl.srCorrections, 0, 'one report aligns nothing');
  tl.senderReport(a, 3_900_000_000, 0, 7_000);
  t.equal(tl.srCorrections, 1);
  t.equal(tl.time(a, 7_000 + 4800, 1300), 4800, 'audio now 100 ms after the video start');
  // A later report does not move it again.
  tl.senderReport(a, 3_900_000_001, 0, 7_000);
  t.equal(tl.srCorrections, 1);
});
