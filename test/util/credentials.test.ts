// The one masking of credentials: tokens by their fingerprint (what an operator matches with
// `sha256sum`), passwords and other secrets by ***, in URLs, prose and log lines; masking twice
// changes nothing.
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { maskCredentials, tokenFingerprint } from '../../src/util/credentials.ts';

t.test('a fingerprint is what sha256sum prints, cut to 12 digits', async (t) => {
  const token = 'a1b2-c3d4 é';
  const shell = execFileSync('sha256sum', { input: token }).toString().slice(0, 12);
  t.equal(tokenFingerprint(token), `sha256:${shell}`);
});

t.test('credentials in text', async (t) => {
  const fp = (v: string) => tokenFingerprint(v);
  const cases: [string, string][] = [
    ['/live/index.m3u8?token=abc&x=1', `/live/index.m3u8?token=${fp('abc')}&x=1`],
    ['/live/mpegts?login=ann&password=pw', '/live/mpegts?login=ann&password=***'],
    ['/xmltv?l=mw&p=secret', '/xmltv?l=mw&p=***'],
    ['/x?TOKEN=a%2Bb+c', `/x?TOKEN=${fp('a+b c')}`],
    ['/x?token=q;pass=w', `/x?token=${fp('q')};pass=***`],
    [
      'no such stream (http://h/x.m3u8?token=abc).',
      `no such stream (http://h/x.m3u8?token=${fp('abc')}).`,
    ],
    ['rtmp://user:pw@host/app', 'rtmp://user:***@host/app'],
    ['/x?token=&p=', '/x?token=&p='],
    ['/x?tokens=1&top=2', '/x?tokens=1&top=2'],
    ['plain words', 'plain words'],
  ];
  for (const [text, shown] of cases) {
    t.equal(maskCredentials(text), shown, text);
    t.equal(maskCredentials(shown), shown, `${text}: masked again, the same`);
  }
});
