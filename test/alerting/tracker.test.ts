// AlertTracker: raise on a raised fault, repeat every repeat-sec, clear only after the fault
// stayed gone for clear-sec (a fault back within it keeps the alert, no new raise).
import t from 'tap';
import { AlertTracker } from '../../src/alerting/tracker.ts';
import type { Fault } from '../../src/alerting/types.ts';
import { ManualClock } from '../../src/util/clock.ts';

function fault(raised = true, key = 'stream:news/no-signal'): Fault {
  return {
    rule: 'stream-down',
    kind: 'stream',
    subject: 'news',
    key,
    message: 'stream news: no signal on any input',
    since: Date.UTC(2026, 0, 1),
    raised,
  };
}

t.test('a fault not raised yet makes no alert; raised, it does, once', async (t) => {
  const clock = new ManualClock();
  const tr = new AlertTracker(clock, { repeatMs: 0, clearMs: 10_000 });
  t.same(tr.update([fault(false)]), [], 'pending in the gate: nothing');
  const ev = tr.update([fault(true)]);
  t.equal(ev.length, 1);
  t.equal(ev[0]!.event, 'raise');
  t.equal(ev[0]!.alert.severity, 'critical', 'the rule gives the severity');
  t.match(ev[0]!.alert.id, /^[0-9a-f]{6}-1$/);
  clock.advance(60_000);
  t.same(tr.update([fault(true)]), [], 'still present: no repeat with repeat-sec 0');
  t.equal(tr.active().length, 1);
});

t.test('hysteresis: cleared after clear-sec gone; back within it keeps the alert', async (t) => {
  const clock = new ManualClock();
  const tr = new AlertTracker(clock, { repeatMs: 0, clearMs: 10_000 });
  tr.update([fault()]);
  clock.advance(1000);
  t.same(tr.update([]), [], 'gone for 0 s: kept');
  clock.advance(9000);
  t.same(tr.update([]), [], 'gone for 9 s: kept');
  // Back, not yet raised again by the gate (alert-delay running): it still holds the alert.
  t.same(tr.update([fault(false)]), [], 'back (pending): no new raise');
  clock.advance(5000);
  t.same(tr.update([]), [], 'gone again: the clock restarts');
  clock.advance(9999);
  t.same(tr.update([]), [], '9.999 s: kept');
  clock.advance(1);
  const ev = tr.update([]);
  t.equal(ev.length, 1);
  t.equal(ev[0]!.event, 'clear');
  t.equal(ev[0]!.reason, 'fault gone');
  t.equal(tr.size, 0);
  const again = tr.update([fault()]);
  t.equal(again[0]!.event, 'raise', 'a new fault after the clear is a new alert');
  t.not(again[0]!.alert.id, ev[0]!.alert.id, 'with a new id');
});

t.test('clear-sec 0 clears at the first sweep without the fault', async (t) => {
  const tr = new AlertTracker(new ManualClock(), { repeatMs: 0, clearMs: 0 });
  tr.update([fault()]);
  t.equal(tr.update([])[0]!.event, 'clear');
});

t.test('repeat-sec repeats an active alert, with its current message', async (t) => {
  const clock = new ManualClock();
  const tr = new AlertTracker(clock, { repeatMs: 30_000, clearMs: 0 });
  tr.update([fault()]);
  clock.advance(29_000);
  t.same(tr.update([fault()]), []);
  clock.advance(1000);
  const f = { ...fault(), message: 'new text' };
  const ev = tr.update([f]);
  t.equal(ev.length, 1);
  t.equal(ev[0]!.event, 'repeat');
  t.equal(ev[0]!.alert.message, 'new text');
  clock.advance(30_000);
  t.equal(tr.update([f])[0]!.event, 'repeat', 'and again 30 s later');
});

t.test('clearAll clears every alert with the reason given', async (t) => {
  const tr = new AlertTracker(new ManualClock(), { repeatMs: 0, clearMs: 10_000 });
  tr.update([fault(true, 'a'), fault(true, 'b')]);
  const ev = tr.clearAll('alerter disabled');
  t.same(
    ev.map((e) => [e.event, e.alert.key, e.reason]),
    [
      ['clear', 'a', 'alerter disabled'],
      ['clear', 'b', 'alerter disabled'],
    ],
  );
  t.equal(tr.size, 0);
});
