// Who is local (src/util/loopback.ts): the socket's peer on 127.0.0.1, no proxy forwarded the
// request, and this process did not send it itself; forwarding headers never make a remote peer
// local.
import net from 'node:net';
import t from 'tap';
import { hostIsLocalName, localRequest, proxied } from '../../src/util/loopback.ts';
import { trackOwnClientSockets } from '../../src/util/own-sockets.ts';

const peer = (remoteAddress: string) => ({ remoteAddress });

t.test('local: loopback peer, nothing forwarded', async (t) => {
  t.ok(localRequest(peer('127.0.0.1'), {}));
  t.ok(localRequest(peer('::ffff:127.0.0.1'), { host: 'localhost:43971' }));
  t.notOk(localRequest(peer('127.0.0.2'), {}), 'another loopback address is not the anonymous one');
  t.notOk(localRequest(peer('10.0.0.1'), {}));
  t.notOk(localRequest({}, {}), 'no peer address');
});

t.test('a request naming this machine by a DNS name is not local (DNS rebinding)', async (t) => {
  for (const host of [
    '127.0.0.1',
    '127.0.0.1:43971',
    'LOCALHOST:1',
    'localhost',
    '[::1]:43971',
    '[::ffff:127.0.0.1]',
    '10.1.2.3:80',
    undefined,
  ])
    t.ok(hostIsLocalName(host), `Host ${host} names this machine`);
  for (const host of [
    'evil.example:43971',
    'rebind.127.0.0.1.nip.example',
    'x',
    'localhost.evil.example',
    '127.0.0.1.evil.example:43971',
    '',
    '[',
  ]) {
    t.notOk(hostIsLocalName(host), `Host ${JSON.stringify(host)} may be rebound`);
    t.notOk(localRequest(peer('127.0.0.1'), { host }), `not anonymous with Host ${host}`);
  }
});

t.test('a forwarded request is not local', async (t) => {
  for (const h of ['forwarded', 'x-forwarded-for', 'x-real-ip', 'via']) {
    t.ok(proxied({ [h]: 'for=1.2.3.4' }), h);
    t.notOk(localRequest(peer('127.0.0.1'), { [h]: '127.0.0.1' }), `${h}, even naming 127.0.0.1`);
  }
  t.notOk(
    localRequest(peer('10.0.0.1'), { 'x-forwarded-for': '127.0.0.1' }),
    'a header never makes a remote peer local',
  );
});

t.test('a connection this process opened is not local', async (t) => {
  trackOwnClientSockets();
  const server = net.createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const accepted = new Promise<net.Socket>((ok) => server.once('connection', ok));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise((ok) => client.once('connect', ok));
  const socket = await accepted;
  t.equal(socket.remoteAddress, '127.0.0.1');
  t.notOk(localRequest(socket, {}), 'our own client on 127.0.0.1');
  client.destroy();
  socket.destroy();
  await new Promise((ok) => server.close(ok));
});
