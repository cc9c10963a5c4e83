// The `url` of an `rtmp` input: pull (rtmp://, rtmps://, default ports, app and stream with its
// query, IPv6) and the listening form with `@`, and the refusals in words.
import t from 'tap';
import { parseRtmpUrl } from '../../src/inputs/rtmp/url.ts';

t.test('pull URLs', async (t) => {
  t.match(parseRtmpUrl('rtmp://origin.example/live/cam1'), {
    tls: false,
    listen: false,
    host: 'origin.example',
    port: 1935,
    app: 'live',
    stream: 'cam1',
    tcUrl: 'rtmp://origin.example:1935/live',
  });
  t.match(parseRtmpUrl('rtmps://h:8443/app/a/b?token=x'), {
    tls: true,
    port: 8443,
    app: 'app',
    stream: 'a/b?token=x',
    tcUrl: 'rtmps://h:8443/app',
  });
  t.match(parseRtmpUrl('rtmps://h/app/s'), { port: 443 });
  t.match(parseRtmpUrl('rtmp://[::1]:1936/live/s'), {
    host: '::1',
    tcUrl: 'rtmp://[::1]:1936/live',
  });
});

t.test('listening URLs', async (t) => {
  t.match(parseRtmpUrl('rtmp://@127.0.0.1:19350/live/KEY?ignored=1'), {
    listen: true,
    host: '127.0.0.1',
    port: 19350,
    app: 'live',
    stream: 'KEY',
  });
  t.match(parseRtmpUrl('rtmp://@:1935/live/k'), { listen: true, host: '0.0.0.0' });
  t.throws(() => parseRtmpUrl('rtmps://@127.0.0.1/live/k'), /over TLS .* not supported/);
});

t.test('refused', async (t) => {
  for (const bad of [
    'http://h/live/s',
    'rtmp://h/live',
    'rtmp://h',
    'rtmp:///live/s',
    'rtmp://h:0/a/s',
  ]) {
    t.throws(() => parseRtmpUrl(bad), /url /, bad);
  }
});
