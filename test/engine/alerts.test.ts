// AlertGate on a ManualClock: a fault is raised once it has persisted `alert-delay` (judged on
// each set(), not by a timer), held while it persists, cleared (and logged) when it goes; a
// fault that comes back waits the whole delay again; disabled alerts list nothing.
import pino from 'pino';
import t from 'tap';
import { AlertGate } from '../../src/engine/alerts.ts';
import { ManualClock } from '../../src/util/clock.ts';

interface Line {
  level: number;
  alert: string;
  msg: string;
}
const WARN = 40;
const INFO = 30;

/** A gate on a fresh ManualClock whose log lines are kept. */
function gate(delayMs = 0): { g: AlertGate; clock: ManualClock; lines: Line[] } {
  const clock = new ManualClock();
  const lines: Line[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  const g = new AlertGate(clock, log);
  g.delayMs = delayMs;
  return { g, clock, lines };
}
const logged = (lines: Line[]) => lines.map((l) => [l.level, l.alert, l.msg]);

t.test('no delay: raised on the first report, logged once as a warning', async (t) => {
  const { g, clock, lines } = gate();
  const since = new Date(clock.now()).toISOString();
  g.set('input-0-failed', true, 'input 0: ENOENT');
  t.same(g.list(), [{ key: 'input-0-failed', message: 'input 0: ENOENT', since, raised: true }]);
  t.equal(g.raisedTotal, 1);
  t.same(logged(lines), [[WARN, 'input-0-failed', 'input 0: ENOENT']]);
});

t.test('the message defaults to the key', async (t) => {
  const { g } = gate();
  g.set('scrambled', true);
  t.equal(g.list()[0]?.message, 'scrambled');
});

t.test('held: raised only once it has persisted the delay, since the first report', async (t) => {
  const { g, clock, lines } = gate(5000);
  const since = new Date(clock.now()).toISOString();
  g.set('no-signal', true);
  t.same(g.list(), [{ key: 'no-signal', message: 'no-signal', since, raised: false }], 'pending');
  clock.advance(4999);
  g.set('no-signal', true);
  t.equal(g.list()[0]?.raised, false, '1 ms before the delay: still pending');
  t.same(lines, [], 'nothing logged while pending');
  clock.advance(1);
  t.equal(g.list()[0]?.raised, false, 'not by the clock alone: judged on the next report');
  g.set('no-signal', true);
  t.same(g.list(), [{ key: 'no-signal', message: 'no-signal', since, raised: true }], 'raised');
  t.equal(g.raisedTotal, 1);
  t.same(logged(lines), [[WARN, 'no-signal', 'no-signal']]);
});

t.test('repeated reports of a raised fault: no new raise, the latest message', async (t) => {
  const { g, clock, lines } = gate();
  const since = new Date(clock.now()).toISOString();
  g.set('input-0-errors', true, 'input 0: 25.0 errors/s');
  for (let i = 0; i < 5; i++) {
    clock.advance(1000);
    g.set('input-0-errors', true, `input 0: ${30 + i}.0 errors/s`);
  }
  t.same(g.list(), [
    { key: 'input-0-errors', message: 'input 0: 34.0 errors/s', since, raised: true },
  ]);
  t.equal(g.raisedTotal, 1, 'raised once');
  t.equal(lines.length, 1, 'logged once');
});

t.test('clear: a raised fault is logged as cleared, a pending one silently dropped', async (t) => {
  const { g, lines } = gate();
  g.set('a', true);
  g.set('a', false);
  t.same(g.list(), []);
  t.same(logged(lines), [
    [WARN, 'a', 'a'],
    [INFO, 'a', 'alert cleared'],
  ]);

  const held = gate(1000);
  held.g.set('b', true);
  held.g.set('b', false);
  t.same(held.g.list(), [], 'pending fault gone');
  t.same(held.lines, [], 'nothing logged for a fault never raised');
  held.g.set('never-seen', false);
  t.same(held.g.list(), []);
  t.same(held.lines, [], 'clearing an unknown key is a no-op');
});

t.test('a fault that comes back waits the whole delay again (flap damping)', async (t) => {
  const { g, clock } = gate(5000);
  g.set('x', true);
  clock.advance(3000);
  g.set('x', false);
  clock.advance(1000);
  const second = new Date(clock.now()).toISOString();
  g.set('x', true);
  clock.advance(4999);
  g.set('x', true);
  t.equal(g.list()[0]?.raised, false, 'the first 3 s do not count');
  clock.advance(1);
  g.set('x', true);
  t.same(g.list(), [{ key: 'x', message: 'x', since: second, raised: true }]);
  t.equal(g.raisedTotal, 1);
});

t.test('raised, cleared, raised again: counted and logged each time', async (t) => {
  const { g, clock, lines } = gate(1000);
  for (let round = 0; round < 3; round++) {
    g.set('x', true);
    clock.advance(1000);
    g.set('x', true);
    g.set('x', false);
    clock.advance(1000);
  }
  t.equal(g.raisedTotal, 3);
  t.same(
    logged(lines).map(([level]) => level),
    [WARN, INFO, WARN, INFO, WARN, INFO],
  );
});

t.test('keys are independent', async (t) => {
  const { g, clock } = gate(1000);
  g.set('a', true);
  clock.advance(500);
  g.set('b', true);
  clock.advance(500);
  g.set('a', true);
  g.set('b', true);
  t.same(
    g.list().map((a) => [a.key, a.raised]),
    [
      ['a', true],
      ['b', false],
    ],
  );
  g.set('a', false);
  t.same(
    g.list().map((a) => a.key),
    ['b'],
  );
});

t.test('disabled: nothing listed or raised; the fault is still tracked', async (t) => {
  const { g, clock, lines } = gate(1000);
  g.enabled = false;
  g.set('x', true);
  clock.advance(2000);
  g.set('x', true);
  t.same(g.list(), [], 'nothing listed');
  t.equal(g.raisedTotal, 0);
  t.same(lines, []);
  // Enabled again: the fault has persisted since its first report, so the next report raises it.
  g.enabled = true;
  g.set('x', true);
  t.same(
    g.list().map((a) => [a.key, a.raised]),
    [['x', true]],
  );
  t.equal(g.raisedTotal, 1);
});

t.test('clear() forgets every fault without logging', async (t) => {
  const { g, lines } = gate();
  g.set('a', true);
  g.set('b', true);
  lines.length = 0;
  g.clear();
  t.same(g.list(), []);
  t.same(lines, []);
  g.set('a', false);
  t.same(lines, [], 'a fault forgotten by clear() is not reported cleared later');
});
