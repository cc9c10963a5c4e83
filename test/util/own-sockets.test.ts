// This process's own client connections (src/util/own-sockets.ts): every kind of client the
// sources use is known to our servers by the time its request arrives, a local tool in another
// process is not, and a connection closed before the server read it stays known for a while.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { promisify } from 'node:util';
import t from 'tap';
import { ManualClock } from '../../src/util/clock.ts';
import {
  CLOSED_KEPT_MS,
  fromOwnClient,
  ownClientCount,
  trackOwnClientSockets,
} from '../../src/util/own-sockets.ts';
import { tempDir } from '../helpers/server.ts';
import { selfSigned } from '../helpers/tls.ts';

const run = promisify(execFile);
const clock = new ManualClock();
trackOwnClientSockets(clock);

/** Listen on a free loopback port; closed (connections dropped) on teardown. */
async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(
    () =>
      new Promise<void>((ok) => {
        (server as http.Server).closeAllConnections?.();
        server.close(() => ok());
      }),
  );
  return (server.address() as net.AddressInfo).port;
}

/** What the servers saw: per request path (or raw first line), whether it came from us. */
const verdicts = new Map<string, boolean>();
const seen = new Map<string, () => void>();
function judged(key: string): Promise<boolean> {
  return new Promise((ok) => {
    if (verdicts.has(key)) return ok(verdicts.get(key)!);
    seen.set(key, () => ok(verdicts.get(key)!));
  });
}
function judge(key: string, socket: net.Socket): void {
  verdicts.set(key, fromOwnClient(socket));
  seen.get(key)?.();
}

const dir = await tempDir(t);
const { cert, key } = await selfSigned(dir, 'own');
const tlsOptions = { cert: await readFile(cert), key: await readFile(key) };
const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
  judge(req.url ?? '', req.socket);
  res.end('ok');
};
const httpPort = await listen(http.createServer(onRequest));
const httpsPort = await listen(https.createServer(tlsOptions, onRequest));
const h2 = http2.createServer();
h2.on('stream', (stream, headers) => {
  judge(String(headers[':path']), stream.session!.socket as net.Socket);
  stream.respond({ ':status': 200 });
  stream.end('ok');
});
const h2Port = await listen(h2);
/** Raw TCP and TLS: the first line the client sends is the key. */
const firstLine = (socket: net.Socket) =>
  socket.once('data', (d) => {
    judge(d.toString().split('\n')[0]!, socket);
    socket.end();
  });
const rawPort = await listen(net.createServer(firstLine));
const tlsPort = await listen(tls.createServer(tlsOptions, firstLine));

t.test('every client kind of the sources is known to our servers', async (t) => {
  const insecure = { rejectUnauthorized: false };
  const clients: [string, () => unknown][] = [
    ['net.connect', () => net.connect(rawPort, '127.0.0.1').end('net.connect\n')],
    [
      'new Socket().connect',
      () => new net.Socket().connect(rawPort, '127.0.0.1').end('new Socket().connect\n'),
    ],
    [
      'tls.connect',
      () => tls.connect({ port: tlsPort, host: '127.0.0.1', ...insecure }).end('tls.connect\n'),
    ],
    ['/http.get', () => http.get(`http://127.0.0.1:${httpPort}/http.get`, (r) => r.resume())],
    [
      '/https.get',
      () => https.get(`https://127.0.0.1:${httpsPort}/https.get`, insecure, (r) => r.resume()),
    ],
    ['/fetch-http', () => fetch(`http://127.0.0.1:${httpPort}/fetch-http`).then((r) => r.text())],
    [
      '/fetch-https',
      // undici's fetch takes no CA here; NODE_TLS_REJECT_UNAUTHORIZED is read at each connect.
      async () => {
        process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = '0';
        try {
          return await (await fetch(`https://127.0.0.1:${httpsPort}/fetch-https`)).text();
        } finally {
          delete process.env['NODE_TLS_REJECT_UNAUTHORIZED'];
        }
      },
    ],
    [
      '/http2',
      () => {
        const session = http2.connect(`http://127.0.0.1:${h2Port}`);
        const req = session.request({ ':path': '/http2' });
        req.on('end', () => session.close()).resume();
      },
    ],
  ];
  for (const [name, client] of clients) {
    const verdict = judged(name);
    await client();
    t.equal(await verdict, true, `${name}: our own`);
  }
});

t.test('a local tool in another process is not ours', async (t) => {
  const verdict = judged('/tool');
  const script = `fetch('http://127.0.0.1:${httpPort}/tool').then((r) => r.text())`;
  await run(process.execPath, ['-e', script]);
  t.equal(await verdict, false);
});

t.test('closed before the server read it: still ours for a while, then forgotten', async (t) => {
  // The server reads nothing until the client side has closed.
  const server = net.createServer((s) => {
    s.pause();
    accepted.push(s);
    wake?.();
  });
  const accepted: net.Socket[] = [];
  let wake: (() => void) | undefined;
  const port = await listen(server);
  const client = net.connect(port, '127.0.0.1');
  // Destroyed as soon as the bytes are handed to the kernel: nothing waits for the server.
  client.write('GET / HTTP/1.1\r\n\r\n', () => client.destroy());
  await new Promise((ok) => client.once('close', ok));
  if (accepted.length === 0) await new Promise<void>((ok) => (wake = ok));
  const s = accepted[0]!;
  t.ok(fromOwnClient(s), 'the request read after the close is still ours');
  clock.advance(CLOSED_KEPT_MS);
  t.notOk(fromOwnClient(s), `forgotten ${CLOSED_KEPT_MS} ms after the close`);
  const before = ownClientCount();
  const other = net.connect(port, '127.0.0.1');
  await new Promise((ok) => other.once('connect', ok));
  other.destroy();
  await new Promise((ok) => other.once('close', ok));
  t.ok(ownClientCount() < before, 'the next close sweeps the expired ones away');
  s.destroy();
});
