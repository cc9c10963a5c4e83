// The stream driver reads a record (every default applied, as the reconciler hands it over)
// into the engine's settings: units converted, defaults coming from the schema only.
import t from 'tap';
import { applyDefaultsAt } from '../../src/config/defaults.ts';
import { kindSchema } from '../../src/config/schema.ts';
import type { StreamApplied } from '../../src/config/spec-types.generated.ts';
import { engineSettings } from '../../src/drivers/stream/instance.ts';

const applied = (rec: Record<string, unknown>) =>
  applyDefaultsAt(kindSchema('stream'), rec) as StreamApplied;

t.test('a bare record gets the schema defaults, in engine units', async (t) => {
  const s = engineSettings(applied({ 'stream-name': 'a', input: [{ type: 'udp', port: 5000 }] }));
  t.equal(s.name, 'a');
  t.equal(s.streamTimeoutMs, 30_000, 'stream-timeout 30,000,000 µs');
  t.equal(s.checkIntervalMs, 60_000, 'check-interval 60,000,000 µs');
  t.equal(s.errorWindowMs, 10_000, 'failover-error-window 10 s');
  t.equal(s.errorRate, 20);
  t.equal(s.fallbackCheck, true);
  t.equal(s.enableAlert, true);
  t.equal(s.alertDelayMs, 0);
  t.equal(s.bitrateMode, 0);
  t.equal(s.epgExport, false);
  t.same(s.outputs, []);
  t.equal(s.inputs.length, 1);
  t.equal(s.inputs[0]!['type'], 'udp');
});

t.test(
  'every setting is a number or a boolean: none left undefined by a missing default',
  async (t) => {
    const s = engineSettings(applied({ 'stream-name': 'b' }));
    for (const [k, v] of Object.entries(s)) {
      if (k === 'inputs' || k === 'outputs' || k === 'name' || k === 'biss') continue;
      t.ok(typeof v === 'number' ? Number.isFinite(v) : typeof v === 'boolean', `${k} = ${v}`);
    }
  },
);

t.test('biss targets: a multiplex stream pairs biss-pnr with biss-key', async (t) => {
  t.same(engineSettings(applied({ 'stream-name': 'a' })).biss, []);
  const s = engineSettings(
    applied({
      'stream-name': 'm',
      mpts: true,
      'biss-pnr': [101, 102],
      'biss-key': ['123456ABCDEF', '0F1E2D3C4B5A6978'],
    }),
  );
  t.same(s.biss, [
    { pnr: 101, key: '123456ABCDEF' },
    { pnr: 102, key: '0F1E2D3C4B5A6978' },
  ]);
});

t.test('set members win over defaults, converted the same way', async (t) => {
  const s = engineSettings(
    applied({
      'stream-name': 'c',
      'stream-timeout': 2_500_000,
      'alert-delay': 3,
      'bitrate-mode': 3,
      'mpegts-bitrate': 8000,
      'fallback-check': false,
    }),
  );
  t.equal(s.streamTimeoutMs, 2500);
  t.equal(s.alertDelayMs, 3000);
  t.equal(s.bitrateMode, 3);
  t.equal(s.fixedRateKbps, 8000);
  t.equal(s.fallbackCheck, false);
});
