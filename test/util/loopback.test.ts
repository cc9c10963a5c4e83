// Who is local (src/util/loopback.ts): the socket's peer on 127.0.0.1, and no proxy forwarded
// the request; forwarding headers never make a remote peer local.
import t from 'tap';
import { localRequest, proxied } from '../../src/util/loopback.ts';

t.test('local: loopback peer, nothing forwarded', async (t) => {
  t.ok(localRequest('127.0.0.1', {}));
  t.ok(localRequest('::ffff:127.0.0.1', { host: 'x' }));
  t.notOk(localRequest('127.0.0.2', {}), 'another loopback address is not the anonymous one');
  t.notOk(localRequest('10.0.0.1', {}));
});

t.test('a forwarded request is not local', async (t) => {
  for (const h of ['forwarded', 'x-forwarded-for', 'x-real-ip', 'via']) {
    t.ok(proxied({ [h]: 'for=1.2.3.4' }), h);
    t.notOk(localRequest('127.0.0.1', { [h]: '127.0.0.1' }), `${h}, even naming 127.0.0.1`);
  }
  t.notOk(
    localRequest('10.0.0.1', { 'x-forwarded-for': '127.0.0.1' }),
    'a header never makes a remote peer local',
  );
});
