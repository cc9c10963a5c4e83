// HTTP/1.1 response reading (src/protocols/http1.ts): every framing fed whole and one byte at a
// time — Content-Length, chunked (extensions, trailers), close-delimited, no body (204, 304),
// interim 1xx answers skipped — keep-alive by version and Connection, and refusals.
import t from 'tap';
import { getRequest, Http1Error, ResponseReader } from '../../src/protocols/http1.ts';

function read(bytes: string, step: number, eof = false) {
  const out = { status: 0, headers: new Map<string, string>(), body: '', ends: 0 };
  const r = new ResponseReader({
    head: (h) => {
      out.status = h.status;
      out.headers = h.headers;
    },
    body: (b) => {
      out.body += b.toString('latin1');
    },
    end: () => out.ends++,
  });
  const all = Buffer.from(bytes, 'latin1');
  let taken = 0;
  for (let o = 0; o < all.length; o += step) {
    // The reader's input is valid during the call only: hand it a copy that is then spoiled.
    const piece = Buffer.from(all.subarray(o, o + step));
    taken += r.feed(piece);
    piece.fill(0x21);
  }
  if (eof) r.eof();
  return { ...out, reusable: r.reusable, taken };
}

const cases: [string, string, { status: number; body: string; reusable: boolean }][] = [
  [
    'Content-Length',
    'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: video/mp2t\r\n\r\nhello',
    { status: 200, body: 'hello', reusable: true },
  ],
  [
    'chunked with an extension and a trailer',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0a\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n',
    { status: 200, body: 'abc0123456789', reusable: true },
  ],
  [
    'Connection: close',
    'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno',
    { status: 404, body: 'no', reusable: false },
  ],
  [
    'HTTP/1.0 without keep-alive',
    'HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx',
    { status: 200, body: 'x', reusable: false },
  ],
  ['204: no body', 'HTTP/1.1 204 No Content\r\n\r\n', { status: 204, body: '', reusable: true }],
  [
    '100 Continue skipped',
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
    { status: 200, body: 'ok', reusable: true },
  ],
];

for (const [name, bytes, want] of cases) {
  t.test(name, async (t) => {
    for (const step of [bytes.length, 1, 7]) {
      const got = read(bytes, step);
      t.equal(got.status, want.status, `status, ${step} bytes at a time`);
      t.equal(got.body, want.body, `body, ${step} bytes at a time`);
      t.equal(got.ends, 1, 'one end');
      t.equal(got.reusable, want.reusable, 'connection reusable or not');
      t.equal(got.taken, bytes.length, 'every byte taken');
    }
  });
}

t.test('close-delimited body ends at the close; a short body is an error', async (t) => {
  const got = read('HTTP/1.1 200 OK\r\n\r\nuntil the end', 4, true);
  t.equal(got.body, 'until the end');
  t.equal(got.ends, 1);
  t.equal(got.reusable, false);
  t.throws(() => read('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort', 3, true), Http1Error);
});

t.test('headers: lower-case names, repeats joined; bytes after the answer not taken', async (t) => {
  const got = read('HTTP/1.1 200 OK\r\nSet-X: a\r\nset-x: b\r\nContent-Length: 0\r\n\r\nEXTRA', 64);
  t.equal(got.headers.get('set-x'), 'a, b');
  t.equal(got.taken, 'HTTP/1.1 200 OK\r\nSet-X: a\r\nset-x: b\r\nContent-Length: 0\r\n\r\n'.length);
});

t.test('refused: not HTTP, a head over 64 KiB, bad sizes, unknown codings', async (t) => {
  t.throws(() => read('SSH-2.0-x\r\n\r\n', 100), /not an HTTP\/1.x response/);
  t.throws(() => read(`HTTP/1.1 200 OK\r\nX: ${'a'.repeat(70_000)}\r\n\r\n`, 4096), /64 KiB/);
  t.throws(() => read('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', 100), /content-length/);
  t.throws(
    () => read('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 100),
    /chunk size/,
  );
  t.throws(() => read('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n', 100), /gzip/);
  t.throws(() => getRequest('/a\r\nX: y', 'h', []), /line break/);
  t.equal(
    getRequest('/a?b', 'h:81', [['User-Agent', 'sluice']]),
    'GET /a?b HTTP/1.1\r\nHost: h:81\r\nUser-Agent: sluice\r\n\r\n',
  );
});

t.test('a Content-Length body read into place by the caller (bodyLeft, bodyRead)', async (t) => {
  const seen: string[] = [];
  const r = new ResponseReader({
    head: (h) => seen.push(`head ${h.status}`),
    body: (b) => seen.push(`body ${b.toString('latin1')}`),
    end: () => seen.push('end'),
  });
  t.equal(r.bodyLeft, 0, 'nothing before the head');
  r.feed(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab', 'latin1'));
  t.equal(r.bodyLeft, 8, 'what the head announced less what came with it');
  r.bodyRead(5);
  t.equal(r.bodyLeft, 3);
  t.same(seen, ['head 200', 'body ab'], 'no body event for bytes read into place, no end yet');
  t.throws(() => r.bodyRead(4), Http1Error, 'more than is left is refused');
  r.bodyRead(3);
  t.same(seen, ['head 200', 'body ab', 'end']);
  t.ok(r.reusable, 'the connection can carry the next request');
  t.equal(r.bodyLeft, 0);

  r.reset();
  r.feed(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab', 'latin1'));
  t.equal(r.bodyLeft, 0, 'a chunked body is never read into place');
});
