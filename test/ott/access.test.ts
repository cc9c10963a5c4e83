// The viewer's credentials carried on by playlists and MPDs (src/ott/access.ts): every URI line
// and URI attribute of HLS (media, master, LL-HLS parts, preload hints, rendition reports, maps)
// and every segment and init URL of an MPD, with `?` or `&` as the URI needs.
import t from 'tap';
import { appendQuery, manifestWithQuery, playlistWithQuery } from '../../src/ott/access.ts';

t.test('appendQuery', async (t) => {
  t.equal(appendQuery('seg-1.ts', 'token=a'), 'seg-1.ts?token=a');
  t.equal(appendQuery('c1/index.m3u8?a=eng', 'token=a'), 'c1/index.m3u8?a=eng&token=a');
  t.equal(appendQuery('x.ts#frag', 'token=a'), 'x.ts?token=a#frag');
});

t.test('HLS: every URI line and URI attribute', async (t) => {
  const text = [
    '#EXTM3U',
    '#EXT-X-VERSION:9',
    '#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="eng",URI="t40p888/index.m3u8"',
    '#EXT-X-STREAM-INF:BANDWIDTH=500000,SUBTITLES="subs"',
    'c1/index.m3u8?a=eng',
    '#EXT-X-MAP:URI="init.mp4"',
    '#EXTINF:1.000,',
    '12.m4s',
    '#EXT-X-PART:DURATION=0.25,URI="13.0.m4s",INDEPENDENT=YES',
    '#EXT-X-PRELOAD-HINT:TYPE=PART,URI="13.1.m4s"',
    '#EXT-X-RENDITION-REPORT:URI="../c2/index.m3u8",LAST-MSN=13,LAST-PART=0',
    '',
  ].join('\n');
  const out = playlistWithQuery(text, 'token=a%20b');
  t.equal(
    out,
    [
      '#EXTM3U',
      '#EXT-X-VERSION:9',
      '#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="eng",URI="t40p888/index.m3u8?token=a%20b"',
      '#EXT-X-STREAM-INF:BANDWIDTH=500000,SUBTITLES="subs"',
      'c1/index.m3u8?a=eng&token=a%20b',
      '#EXT-X-MAP:URI="init.mp4?token=a%20b"',
      '#EXTINF:1.000,',
      '12.m4s?token=a%20b',
      '#EXT-X-PART:DURATION=0.25,URI="13.0.m4s?token=a%20b",INDEPENDENT=YES',
      '#EXT-X-PRELOAD-HINT:TYPE=PART,URI="13.1.m4s?token=a%20b"',
      '#EXT-X-RENDITION-REPORT:URI="../c2/index.m3u8?token=a%20b",LAST-MSN=13,LAST-PART=0',
      '',
    ].join('\n'),
  );
  t.equal(
    playlistWithQuery('#EXTM3U\r\nseg-1.ts\r\n', 'token=x'),
    '#EXTM3U\r\nseg-1.ts?token=x\r\n',
    'CRLF kept',
  );
});

t.test('MPD: segment templates, lists and init URLs', async (t) => {
  const mpd =
    '<SegmentTemplate timescale="90000" initialization="c1/init.mp4" media="c1/$Number$.m4s" startNumber="3"/>' +
    '<SegmentList><Initialization sourceURL="c2/init.mp4"/><SegmentURL media="c2/9.m4s"/></SegmentList>' +
    '<SegmentURL media="time/1.m4s?t=5"/>';
  t.equal(
    manifestWithQuery(mpd, 'login=a&password=b'),
    '<SegmentTemplate timescale="90000" initialization="c1/init.mp4?login=a&amp;password=b" ' +
      'media="c1/$Number$.m4s?login=a&amp;password=b" startNumber="3"/>' +
      '<SegmentList><Initialization sourceURL="c2/init.mp4?login=a&amp;password=b"/>' +
      '<SegmentURL media="c2/9.m4s?login=a&amp;password=b"/></SegmentList>' +
      '<SegmentURL media="time/1.m4s?t=5&amp;login=a&amp;password=b"/>',
  );
});
