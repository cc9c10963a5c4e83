// The user driver keeps the shared UserTable in step with the user records.
import t from 'tap';
import { userDriver } from '../../src/drivers/users.ts';
import { USERS_SERVICE, UserTable } from '../../src/drivers/users-table.ts';
import { silentLogger } from '../../src/log.ts';
import { createHost } from '../../src/reconciler/host.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';
import { applied } from '../helpers/desired.ts';

const user = (login: string, password: string, role = 'viewer') =>
  applied('user', login, { login, password, role });

t.test('creates the table when absent and keeps accounts in step', async (t) => {
  const host = createHost({ log: silentLogger, clock: new ManualClock(0), dataDir: '/x' });
  const inst = await userDriver.create(user('ann', 'pw1', 'admin'), host);
  const table = host.services.get(USERS_SERVICE)!;
  t.ok(table instanceof UserTable);
  t.same(table.get('ann'), { login: 'ann', password: 'pw1', role: 'admin' });
  t.same(inst.status(), { state: 'active', login: 'ann', role: 'admin' }, 'no password in status');

  await inst.update(user('ann', 'pw2', 'viewer'), []);
  t.same(table.get('ann'), { login: 'ann', password: 'pw2', role: 'viewer' });

  await inst.close();
  await inst.close();
  t.equal(table.get('ann'), undefined);
  t.equal(table.size(), 0);
});

t.test('uses the table the server already published', async (t) => {
  const table = new UserTable();
  const services = new Services().set(USERS_SERVICE, table);
  const host = createHost({
    log: silentLogger,
    clock: new ManualClock(0),
    dataDir: '/x',
    services,
  });
  await userDriver.create(user('bob', 'x'), host);
  await userDriver.create(user('cy', 'y', 'weird'), host);
  t.equal(table.get('bob')?.role, 'viewer');
  t.equal(table.get('cy')?.role, 'viewer', 'an unknown role gets the least power');
  t.equal(table.size(), 2);
});
