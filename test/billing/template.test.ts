// Billing request templates: placeholders escaped for where they stand, the built-in query,
// body kinds and their content types, header lines.
import t from 'tap';
import {
  bodyKind,
  builtinQuery,
  fillBody,
  fillTemplate,
  parseHeaderLines,
  unknownPlaceholders,
} from '../../src/billing/template.ts';

const values = { login: 'ann&co', token: 'a b"<c>', stream: 'news', ip: '10.0.0.1' };

t.test('placeholders are escaped for their place', async (t) => {
  t.equal(fillTemplate('u={login}&t={token}', values, 'query'), 'u=ann%26co&t=a%20b%22%3Cc%3E');
  t.equal(fillTemplate('{"t":"{token}"}', values, 'json'), '{"t":"a b\\"<c>"}');
  t.equal(fillTemplate('<r t="{token}"/>', values, 'xml'), '<r t="a b&quot;&lt;c&gt;"/>');
  t.equal(fillTemplate('X: {token}', { token: 'a\r\nEvil: 1' }, 'none'), 'X: a  Evil: 1');
  t.equal(fillTemplate('{password}', values, 'query'), '', 'a missing value is empty');
  t.equal(fillTemplate('{nope} {stream}', values, 'query'), '{nope} news', 'unknown left as is');
  t.same(unknownPlaceholders('{nope} {stream} {x_y}'), ['{nope}', '{x_y}']);
});

t.test('the built-in query names every placeholder', async (t) => {
  const q = new URLSearchParams(builtinQuery({ ...values, event: 'auth' }));
  t.equal(q.get('event'), 'auth');
  t.equal(q.get('login'), 'ann&co');
  t.equal(q.get('token'), 'a b"<c>');
  t.equal(q.get('password'), '');
  t.same(
    [...q.keys()],
    [
      'event',
      'login',
      'password',
      'token',
      'ip',
      'stream',
      'session',
      'user_agent',
      'bytes',
      'duration',
      'secret',
    ],
  );
});

t.test('body kind and content type from the template', async (t) => {
  t.equal(bodyKind('  {"a":1}'), 'json');
  t.equal(bodyKind('[1]'), 'json');
  t.equal(bodyKind('<q/>'), 'xml');
  t.equal(bodyKind('a=1'), 'form');
  t.same(fillBody('l={login}', values, ''), {
    body: 'l=ann%26co',
    contentType: 'application/x-www-form-urlencoded',
  });
  t.same(fillBody('{"l":"{login}"}', values, ''), {
    body: '{"l":"ann&co"}',
    contentType: 'application/json',
  });
  t.same(fillBody('<q l="{login}"/>', values, ''), {
    body: '<q l="ann&amp;co"/>',
    contentType: 'application/xml',
  });
  t.equal(
    fillBody('a', values, 'text/x-custom').contentType,
    'text/x-custom',
    'an explicit type wins',
  );
});

t.test('header lines', async (t) => {
  const { headers, bad } = parseHeaderLines(
    'X-Key: abc\r\n\nX-Empty:\nno colon here\nBad Name: 1\n',
  );
  t.same(headers, [
    ['X-Key', 'abc'],
    ['X-Empty', ''],
  ]);
  t.same(bad, ['no colon here', 'Bad Name: 1']);
});
