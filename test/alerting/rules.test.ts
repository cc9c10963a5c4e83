// The rule table and the error-rate window of tr101290-p1 and cc-errors.
import t from 'tap';
import { ErrorRateWindow, RULES, streamRule } from '../../src/alerting/rules.ts';

t.test('stream gate keys map to rules; unknown keys are ignored', async (t) => {
  t.equal(streamRule('no-signal'), 'stream-down');
  t.equal(streamRule('backup-active'), 'failover');
  t.equal(streamRule('scrambled'), 'scrambled');
  t.equal(streamRule('tr101290-p1'), 'tr101290-p1');
  t.equal(streamRule('cc-errors'), 'cc-errors');
  t.equal(streamRule('input-2-failed'), 'input-fault');
  t.equal(streamRule('input-0-unsupported'), 'input-fault');
  t.equal(streamRule('input-1-errors'), 'input-fault');
  t.equal(streamRule('something-else'), undefined);
  t.equal(RULES['stream-down'].severity, 'critical');
  t.equal(RULES['cc-errors'].severity, 'info');
});

t.test('rates over the window; a partial window counts as full', async (t) => {
  const w = new ErrorRateWindow();
  w.add(0, { input: 0, p1: 0, cc: 0 }, 10_000);
  w.add(1000, { input: 0, p1: 20, cc: 5 }, 10_000);
  t.same(w.rates(10_000), { p1: 2, cc: 0.5 }, '20 errors in the first second: 2/s over 10 s');
  for (let s = 2; s <= 11; s++) w.add(s * 1000, { input: 0, p1: 20, cc: 5 }, 10_000);
  t.same(w.rates(10_000), { p1: 0, cc: 0 }, 'the burst left the window');
  for (let s = 12; s <= 22; s++)
    w.add(s * 1000, { input: 0, p1: 20 + (s - 11) * 3, cc: 5 }, 10_000);
  t.equal(w.rates(10_000).p1, 3, 'steady 3/s');
});

t.test('a new active input or counters that went down restart the window', async (t) => {
  const w = new ErrorRateWindow();
  w.add(0, { input: 0, p1: 100, cc: 100 }, 10_000);
  w.add(1000, { input: 1, p1: 5, cc: 5 }, 10_000);
  t.same(w.rates(10_000), { p1: 0, cc: 0 }, 'other input: one sample, no rate');
  w.add(2000, { input: 1, p1: 15, cc: 5 }, 10_000);
  t.equal(w.rates(10_000).p1, 1);
  w.add(3000, { input: 1, p1: 2, cc: 0 }, 10_000);
  t.same(w.rates(10_000), { p1: 0, cc: 0 }, 'counters reset: no negative rate');
});
