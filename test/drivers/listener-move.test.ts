// moveListener (src/util/listener-move.ts), which the admin and EPG servers move their sockets
// with: on loopback, the serving socket survives a new port another socket holds, and a
// same-port move whose new listener fails binds the old settings again.
import net from 'node:net';
import t from 'tap';
import { moveListener } from '../../src/util/listener-move.ts';

interface L {
  server: net.Server;
  port: number;
}

async function bind(port: number): Promise<L> {
  const server = net.createServer((s) => s.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return { server, port: (server.address() as net.AddressInfo).port };
}

const shut = (l: L) => new Promise<void>((r) => l.server.close(() => r()));

/** Does something accept connections on `port`? */
const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

t.test('a new port another socket holds: the old listener keeps serving', async (t) => {
  let held: L | undefined = await bind(0);
  const taken = await bind(0);
  t.teardown(() => Promise.all([shut(taken), held ? shut(held) : undefined]));
  const old = held;
  await t.rejects(
    moveListener<L>({
      old,
      samePort: false,
      open: () => bind(taken.port),
      reopen: () => bind(old.port),
      shut,
      hold: (l) => {
        held = l;
      },
    }),
    { code: 'EADDRINUSE' },
  );
  t.equal(held, old, 'the old listener is still the one held');
  t.ok(await answers(old.port), 'and it still accepts');
});

t.test('a free new port: bound first, then the old one closes', async (t) => {
  let held: L | undefined = await bind(0);
  t.teardown(() => (held ? shut(held) : undefined));
  const old = held;
  await moveListener<L>({
    old,
    samePort: false,
    open: () => bind(0),
    reopen: () => bind(old.port),
    shut,
    hold: (l) => {
      held = l;
    },
  });
  t.not(held, old);
  t.ok(await answers(held!.port), 'the new one accepts');
  t.notOk(await answers(old.port), 'the old one is closed');
});

t.test('the same port, the new listener failing: the old settings are bound again', async (t) => {
  let held: L | undefined = await bind(0);
  t.teardown(() => (held ? shut(held) : undefined));
  const old = held;
  await t.rejects(
    moveListener<L>({
      old,
      samePort: true,
      open: () => Promise.reject(new Error('the certificate is not usable')),
      reopen: () => bind(old.port),
      shut,
      hold: (l) => {
        held = l;
      },
    }),
    /not usable/,
  );
  t.not(held, old, 'a new socket');
  t.equal(held?.port, old.port, 'on the old port');
  t.ok(await answers(old.port), 'which accepts');
});
