// A handler's answer forwarded from a stream worker (src/plane/wire-http.ts) is the one Fastify
// gives on the main thread: the same handler calls, answered both ways, must give the same
// status, content type, length and body.
import Fastify from 'fastify';
import t from 'tap';
import type { OttReply } from '../../src/ott/request.ts';
import type { FromWorker } from '../../src/plane/protocol.ts';
import { WireSocket, wireExchange } from '../../src/plane/wire-http.ts';

type Answer = (reply: OttReply) => unknown;

const CASES: Record<string, Answer> = {
  'an object': (r) => r.code(404).send({ status: 404, message: 'not found' }),
  'an object with a JSON type': (r) =>
    r.code(404).type('application/json').send({ status: 404, message: 'not found' }),
  'a string with a JSON type': (r) => r.type('application/json').send('{"a":1}'),
  'a string with a JSON type and its charset': (r) =>
    r.type('application/json; charset=utf-8').send('{"a":1}'),
  'a string with no type': (r) => r.send('plain words'),
  'a playlist': (r) => r.type('application/vnd.apple.mpegurl').send('#EXTM3U\n'),
  'bytes with no type': (r) => r.send(Buffer.from([0x47, 0, 0])),
  'bytes with a type': (r) => r.type('video/mp2t').send(Buffer.from([0x47, 0, 0])),
  nothing: (r) => r.code(204).send(),
  'nothing, 200': (r) => r.send(),
  'not modified': (r) => r.code(304).send(),
  'a body on a 204': (r) => r.code(204).type('text/plain').send('x'),
  'the length the handler set': (r) =>
    r
      .type('video/mp2t')
      .header('Content-Length', 99)
      .send(Buffer.from([0x47, 0, 0])),
};

async function viaFastify(method: 'GET' | 'HEAD', answer: Answer) {
  const app = Fastify();
  app.route({
    method,
    url: '/x',
    exposeHeadRoute: false,
    handler: (_req, reply) => answer(reply as unknown as OttReply),
  });
  const res = await app.inject({ method, url: '/x' });
  await app.close();
  return {
    status: res.statusCode,
    type: res.headers['content-type'],
    length: String(res.headers['content-length']),
    body: res.body,
  };
}

function viaWorker(method: 'GET' | 'HEAD', answer: Answer) {
  const got: FromWorker[] = [];
  const { reply } = wireExchange(
    1,
    { method, url: '/x', query: {}, headers: {}, ip: '127.0.0.1', conn: 1 },
    new WireSocket('127.0.0.1'),
    (m) => got.push(m),
  );
  answer(reply);
  const head = got.find((m) => m.t === 'head');
  const headers = head?.t === 'head' ? head.headers : {};
  const find = (name: string) =>
    Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
  const body = got
    .map((m) =>
      (m.t === 'body' || m.t === 'end') && m.data ? Buffer.from(m.data) : Buffer.alloc(0),
    )
    .reduce((a, b) => Buffer.concat([a, b]), Buffer.alloc(0));
  return {
    status: head?.t === 'head' ? head.status : 0,
    type: find('content-type'),
    length: String(find('content-length')),
    body: body.toString(),
  };
}

for (const method of ['GET', 'HEAD'] as const) {
  for (const [name, answer] of Object.entries(CASES)) {
    t.test(`${method} ${name}: as Fastify answers it`, async (t) => {
      t.same(viaWorker(method, answer), await viaFastify(method, answer));
    });
  }
}
