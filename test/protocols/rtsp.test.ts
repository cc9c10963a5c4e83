// RTSP messages and SDP, the pure parts: requests written, responses read across chunk
// boundaries, interleaved `$` frames between messages, the 64 KiB header and 1 MiB body bounds
// (a 1 MB header is refused before it is buffered whole), Session/Transport/RTP-Info headers,
// SDP media with rtpmap/fmtp, control URLs resolved, unknown codecs kept as unsupported.
import t from 'tap';
import {
  MAX_HEADER_BYTES,
  parseRtpInfo,
  parseSession,
  parseTransport,
  type RtspMessage,
  RtspProtocolError,
  RtspReader,
  writeRequest,
} from '../../src/protocols/rtsp/message.ts';
import {
  aacConfigOf,
  MAX_SDP_MEDIA,
  paramSetsOf,
  parseSdp,
  resolveControl,
  type SdpMedia,
} from '../../src/protocols/rtsp/sdp.ts';

t.test('writeRequest', async (t) => {
  const b = writeRequest('DESCRIBE', 'rtsp://h/live', { CSeq: 2, Accept: 'application/sdp' });
  t.equal(
    b.toString(),
    'DESCRIBE rtsp://h/live RTSP/1.0\r\nCSeq: 2\r\nAccept: application/sdp\r\n\r\n',
  );
  t.throws(() => writeRequest('OPTIONS', '*', { 'User-Agent': 'a\r\nX: y' }), /line break/);
});

t.test('reader: responses, bodies and interleaved frames across chunks', async (t) => {
  const got: RtspMessage[] = [];
  const r = new RtspReader((m) => got.push(m));
  const sdp = 'v=0\r\n';
  const wire = Buffer.concat([
    Buffer.from(
      `RTSP/1.0 200 OK\r\nCSeq: 1\r\nContent-Length: ${sdp.length}\r\nWWW-Authenticate: Basic realm="a"\r\nWWW-Authenticate: Digest realm="b", nonce="n"\r\n\r\n${sdp}`,
    ),
    Buffer.from([0x24, 0, 0, 3, 1, 2, 3]),
    Buffer.from('RTSP/1.0 404 Not Found\r\nCSeq: 2\r\n\r\n'),
    Buffer.from([0x24, 1, 0, 0]),
  ]);
  for (let i = 0; i < wire.length; i += 5) r.push(wire.subarray(i, i + 5));
  t.equal(got.length, 4);
  const a = got[0]!;
  t.equal(a.kind, 'response');
  if (a.kind === 'response') {
    t.equal(a.status, 200);
    t.equal(a.headers['cseq'], '1');
    t.equal(a.body.toString(), sdp);
    t.same(a.challenges, ['Basic realm="a"', 'Digest realm="b", nonce="n"']);
  }
  t.same(got[1], { kind: 'interleaved', channel: 0, data: Buffer.from([1, 2, 3]) });
  t.match(got[2], { kind: 'response', status: 404, reason: 'Not Found' });
  t.match(got[3], { kind: 'interleaved', channel: 1 });
  t.equal(r.buffered, 0);
});

t.test('reader: a request from the server', async (t) => {
  const got: RtspMessage[] = [];
  new RtspReader((m) => got.push(m)).push(Buffer.from('OPTIONS * RTSP/1.0\r\nCSeq: 9\r\n\r\n'));
  t.match(got, [{ kind: 'request', method: 'OPTIONS', uri: '*' }]);
});

t.test('reader: bounds', async (t) => {
  const r = new RtspReader(() => {});
  r.push(Buffer.from('RTSP/1.0 200 OK\r\nX: '));
  // A 1 MB header arriving in 16 KiB chunks is refused once 64 KiB are held, not at the end.
  const chunk = Buffer.alloc(16 * 1024, 0x61);
  let thrownAt = -1;
  for (let i = 0; i < 64; i++) {
    try {
      r.push(chunk);
    } catch (e) {
      t.type(e, RtspProtocolError);
      thrownAt = i;
      break;
    }
  }
  t.ok(
    thrownAt >= 0 && thrownAt * chunk.length <= MAX_HEADER_BYTES + chunk.length,
    'refused early',
  );
  t.throws(
    () =>
      new RtspReader(() => {}).push(
        Buffer.from('RTSP/1.0 200 OK\r\nContent-Length: 2000000\r\n\r\n'),
      ),
    /body of 2000000 bytes/,
  );
  t.throws(
    () => new RtspReader(() => {}).push(Buffer.from('HTTP/1.1 200 OK\r\n\r\n')),
    /not an RTSP message/,
  );
});

t.test('Session, Transport, RTP-Info', async (t) => {
  t.same(parseSession('ABCD;timeout=30'), { id: 'ABCD', timeoutS: 30 });
  t.same(parseSession('ABCD'), { id: 'ABCD', timeoutS: 60 });
  t.same(parseTransport('RTP/AVP/TCP;unicast;interleaved=2-3;ssrc=0A0B0C0D'), {
    interleaved: [2, 3],
    ssrc: 0x0a0b0c0d,
  });
  t.same(
    parseTransport('RTP/AVP;unicast;client_port=5000-5001;server_port=6000-6001;source=1.2.3.4'),
    {
      serverPorts: [6000, 6001],
      source: '1.2.3.4',
    },
  );
  t.same(parseRtpInfo('url=rtsp://h/a/stream=0;seq=5;rtptime=100, url=rtsp://h/a/stream=1;seq=7'), [
    { url: 'rtsp://h/a/stream=0', seq: 5, rtptime: 100 },
    { url: 'rtsp://h/a/stream=1', seq: 7 },
  ]);
});

const SDP = [
  'v=0',
  'o=- 0 0 IN IP4 127.0.0.1',
  's=test',
  'a=control:*',
  'm=video 0 RTP/AVP 96',
  'a=rtpmap:96 H264/90000',
  'a=fmtp:96 packetization-mode=1;profile-level-id=42c01e;sprop-parameter-sets=Z0LAHtkA,aMuMsg==',
  'a=control:stream=0',
  'm=audio 0 RTP/AVP 97',
  'a=rtpmap:97 MPEG4-GENERIC/48000/2',
  'a=fmtp:97 streamtype=5;profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config=1190',
  'a=control:rtsp://other/abs',
  'm=audio 0 RTP/AVP 98',
  'a=rtpmap:98 OPUS/48000/2',
  'm=video 0 RTP/AVP 33',
  '',
].join('\r\n');

t.test('SDP', async (t) => {
  const s = parseSdp(SDP, 'rtsp://h:554/live/');
  t.equal(s.control, 'rtsp://h:554/live/');
  t.equal(s.media.length, 4);
  const [v, a, o, ts] = s.media as [SdpMedia, SdpMedia, SdpMedia, SdpMedia];
  t.match(v, { type: 'video', payloadType: 96, encoding: 'H264', clockRate: 90000, codec: 'h264' });
  t.equal(v.control, 'rtsp://h:554/live/stream=0');
  t.same(
    paramSetsOf(v).map((b: Buffer) => b.toString('hex')),
    ['6742c01ed900', '68cb8cb2'],
  );
  t.match(a, { encoding: 'MPEG4-GENERIC', clockRate: 48000, channels: 2, codec: 'aac' });
  t.equal(a.fmtp.sizelength, '13');
  t.equal(aacConfigOf(a)?.toString('hex'), '1190');
  t.equal(a.control, 'rtsp://other/abs');
  t.match(o, { encoding: 'OPUS', codec: undefined });
  t.match(ts, { payloadType: 33, encoding: 'MP2T', codec: 'mp2t' });
  t.throws(() => parseSdp('hello', 'rtsp://h/'), /v= line/);
});

t.test('SDP: many media sections are bounded', async (t) => {
  const many = ['v=0', ...Array.from({ length: 100 }, () => 'm=video 0 RTP/AVP 96')].join('\n');
  const s = parseSdp(many, 'rtsp://h/x');
  t.equal(s.media.length, MAX_SDP_MEDIA);
  t.equal(s.dropped, 100 - MAX_SDP_MEDIA);
});

t.test('control resolution', async (t) => {
  t.equal(resolveControl('rtsp://h/live', 'trackID=1'), 'rtsp://h/live/trackID=1');
  t.equal(resolveControl('rtsp://h/live/', 'trackID=1'), 'rtsp://h/live/trackID=1');
  t.equal(resolveControl('rtsp://h/live', '*'), 'rtsp://h/live');
  t.equal(resolveControl('rtsp://h/live', undefined), 'rtsp://h/live');
  t.equal(resolveControl('rtsp://h:1/live', '/x/y'), 'rtsp://h:1/x/y');
  t.equal(resolveControl('rtsp://h/live?a=1', 't=0'), 'rtsp://h/live/t=0?a=1');
});
