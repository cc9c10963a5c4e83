// HLS playlist parsing (RFC 8216): master variants in order, media segments with sequence
// numbers, discontinuities, keys, maps, byte ranges; bounds on lines and variants.
import t from 'tap';
import {
  MAX_LINE,
  MAX_VARIANTS,
  parseAttributes,
  parsePlaylist,
  resolveUri,
} from '../../src/protocols/hls/playlist.ts';
import {
  basicAuthorization,
  DigestClient,
  parseChallenges,
} from '../../src/protocols/http-auth.ts';

t.test('master: variants in playlist order, URIs resolved', async (t) => {
  const pl = parsePlaylist(
    '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=100000,RESOLUTION=160x120,CODECS="avc1.42c00d,mp4a.40.2"\nlow/index.m3u8\n' +
      '#EXT-X-STREAM-INF:BANDWIDTH=500000,RESOLUTION=320x240\n/mid.m3u8\n' +
      '#EXT-X-STREAM-INF:BANDWIDTH=900000\nhttp://other/high.m3u8\n',
    'http://h:1/live/master.m3u8?token=1',
  );
  t.equal(pl.kind, 'master');
  if (pl.kind !== 'master') return;
  t.same(
    pl.variants.map((v) => [v.url, v.bandwidth, v.resolution]),
    [
      ['http://h:1/live/low/index.m3u8', 100000, '160x120'],
      ['http://h:1/mid.m3u8', 500000, '320x240'],
      ['http://other/high.m3u8', 900000, ''],
    ],
  );
  t.equal(pl.variants[0]!.codecs, 'avc1.42c00d,mp4a.40.2', 'quoted commas kept');
});

t.test('media: sequence numbers, discontinuity, key, map, byte ranges', async (t) => {
  const pl = parsePlaylist(
    [
      '#EXTM3U',
      '#EXT-X-TARGETDURATION:6',
      '#EXT-X-MEDIA-SEQUENCE:41',
      '#EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"',
      '#EXT-X-KEY:METHOD=AES-128,URI="k.bin",IV=0x0102',
      '#EXTINF:6.0,',
      'a.m4s',
      '#EXT-X-DISCONTINUITY',
      '#EXT-X-KEY:METHOD=NONE',
      '#EXTINF:5.5,title',
      '#EXT-X-BYTERANGE:1000@2000',
      'b.m4s',
      '#EXT-X-BYTERANGE:500',
      '#EXTINF:4,',
      'b.m4s',
      '#EXT-X-ENDLIST',
    ].join('\r\n'),
    'http://h/p/index.m3u8',
  );
  t.equal(pl.kind, 'media');
  if (pl.kind !== 'media') return;
  t.equal(pl.targetDuration, 6);
  t.equal(pl.ended, true);
  t.same(
    pl.segments.map((s) => [s.seq, s.duration, s.discontinuity, s.key?.method ?? '', s.range]),
    [
      [41, 6, false, 'AES-128', undefined],
      [42, 5.5, true, '', { length: 1000, offset: 2000 }],
      [43, 4, false, '', { length: 500, offset: 3000 }],
    ],
  );
  t.equal(pl.segments[0]!.key!.url, 'http://h/p/k.bin');
  t.equal(pl.segments[0]!.key!.iv!.toString('hex'), '00000000000000000000000000000102');
  t.same(pl.segments[0]!.map, {
    uri: 'init.mp4',
    url: 'http://h/p/init.mp4',
    range: { length: 720, offset: 0 },
  });
});

t.test('not a playlist; very long lines skipped; variants capped', async (t) => {
  t.throws(() => parsePlaylist('<html>', 'http://h/'), /not an HLS playlist/);
  const long = `#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n${'x'.repeat(MAX_LINE + 1)}\n#EXTINF:2,\nok.ts\n`;
  const pl = parsePlaylist(long, 'http://h/');
  t.same(pl.kind === 'media' && pl.segments.map((s) => s.uri), ['ok.ts']);
  const lines = ['#EXTM3U'];
  for (let i = 0; i < MAX_VARIANTS + 5; i++)
    lines.push('#EXT-X-STREAM-INF:BANDWIDTH=1', `v${i}.m3u8`);
  const m = parsePlaylist(lines.join('\n'), 'http://h/');
  t.ok(m.kind === 'master' && m.variants.length === MAX_VARIANTS && m.variantsDropped === 5);
});

t.test('disable-url-encode: URIs as published', async (t) => {
  t.equal(resolveUri('http://h/a/b.m3u8', 'seg%2F1 x.ts'), 'http://h/a/seg%2F1%20x.ts');
  t.equal(resolveUri('http://h/a/b.m3u8', 'x/../s.ts'), 'http://h/a/s.ts', 'normalised by default');
  t.equal(resolveUri('http://h/a/b.m3u8', 'x/../s.ts', true), 'http://h/a/x/../s.ts', 'kept raw');
  t.same(parseAttributes('A=1,B="x,y",c=0x10'), { A: '1', B: 'x,y', C: '0x10' });
});

t.test('http auth: challenges, Basic, Digest (RFC 7616 example)', async (t) => {
  const ch = parseChallenges(
    'Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=MD5, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS", Basic realm="x"',
  );
  t.same(
    ch.map((c) => c.scheme),
    ['digest', 'basic'],
  );
  const d = new DigestClient(ch[0]!.params, 'Mufasa', 'Circle of Life');
  const h = d.authorization(
    'GET',
    '/dir/index.html',
    'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  );
  t.match(h, /response="8ca523f5e9506fed4657c9700eebdbec"/, 'RFC 7616 3.9.1 MD5 response');
  t.match(h, /nc=00000001/);
  t.equal(basicAuthorization('Aladdin', 'open sesame'), 'Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==');
});
