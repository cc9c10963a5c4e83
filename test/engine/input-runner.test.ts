// The input runner takes its factories from the caller (the engine imports no input type) and
// gives each transport a narrow lookup of other streams' buses.
import t from 'tap';
import type { StreamBus } from '../../src/engine/bus.ts';
import { type InputContext, NOT_SUPPORTED_YET } from '../../src/engine/input.ts';
import { InputRunner } from '../../src/engine/input-runner.ts';
import { silentLogger } from '../../src/log.ts';
import { ManualClock } from '../../src/util/clock.ts';

function runner(type: string, seen: InputContext[], buses: Map<string, StreamBus>) {
  return new InputRunner({
    factories: {
      fake: (_cfg, ctx) => {
        seen.push(ctx);
        return { start() {}, close: async () => {}, status: () => ({}) };
      },
    },
    bus: (ref) => (ref.kind === 'stream' ? buses.get(ref.key) : undefined),
    index: 0,
    cfg: { type },
    log: silentLogger,
    clock: new ManualClock(0),
    dataDir: '/nonexistent',
    streamName: 's',
    wantSections: () => false,
    onPackets() {},
    onSections() {},
    onDiscontinuity() {},
  });
}

t.test('a type the factories lack is not supported, one they have opens', async (t) => {
  const seen: InputContext[] = [];
  const missing = runner('srt', seen, new Map());
  t.notOk(missing.supported);
  missing.open('active');
  t.equal(missing.failed, NOT_SUPPORTED_YET);
  const fake = runner('fake', seen, new Map());
  t.ok(fake.supported);
  fake.open('active');
  t.equal(seen.length, 1, 'the factory was called once');
  await fake.close();
});

t.test('the context finds another stream bus by key, and nothing else', async (t) => {
  const seen: InputContext[] = [];
  const bus: StreamBus = { subscribe: () => () => {} };
  const r = runner('fake', seen, new Map([['news', bus]]));
  r.open('active');
  const ctx = seen[0]!;
  t.equal(ctx.bus({ kind: 'stream', key: 'news' }), bus);
  t.equal(ctx.bus({ kind: 'stream', key: 'other' }), undefined);
  t.equal(ctx.bus({ kind: 'adapter', key: 'news' }), undefined);
  await r.close();
});
