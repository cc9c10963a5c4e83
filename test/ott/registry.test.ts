// The OTT registry lives in a server's services map: two servers in one process (as in tests)
// never see each other's streams under the same name.
import pino from 'pino';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import { ottRegistry } from '../../src/ott/registry.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';
import { TinyBus } from '../helpers/ott.ts';

t.test('one registry per services map', async (t) => {
  const a = new Services();
  const b = new Services();
  const make = (services: Services) =>
    createOttService({
      name: 'news',
      spec: { 'ott-hls': 2 },
      bus: new TinyBus(),
      clock: new ManualClock(),
      log: pino({ level: 'silent' }),
      services,
    });
  const sa = make(a);
  const sb = make(b);
  t.equal(ottRegistry(a).find('news'), sa);
  t.equal(ottRegistry(b).find('news'), sb);
  sa.close();
  t.equal(ottRegistry(a).find('news'), undefined, 'close unregisters');
  t.equal(ottRegistry(b).find('news'), sb, 'the other server keeps its stream');
  sb.close();
});
