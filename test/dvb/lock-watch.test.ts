// The re-tune policy, table-driven over polls: lock, loss, the grace, the doubling backoff and
// its cap, lock back resetting it.
import t from 'tap';
import { type LockEvent, LockWatch } from '../../src/dvb/lock-watch.ts';

const policy = { retuneAfterMs: 2000, backoffMinMs: 1000, backoffMaxMs: 4000 };

const cases: {
  name: string;
  polls: [number, boolean, LockEvent][];
  retunes: number;
  changes: number;
}[] = [
  {
    name: 'locks at once, stays locked',
    polls: [
      [0, true, 'locked'],
      [500, true, null],
      [1000, true, null],
    ],
    retunes: 0,
    changes: 0,
  },
  {
    name: 'loses lock, comes back within the grace: no re-tune',
    polls: [
      [0, true, 'locked'],
      [500, false, 'lost'],
      [1500, false, null],
      [2000, true, 'locked'],
    ],
    retunes: 0,
    changes: 2,
  },
  {
    name: 'lock lost for good: re-tunes after the grace, then 1 s, 2 s, 4 s, 4 s',
    polls: [
      [0, true, 'locked'],
      [1000, false, 'lost'],
      [2500, false, null],
      [3000, false, 'retune'],
      [3500, false, null],
      [4000, false, 'retune'],
      [5500, false, null],
      [6000, false, 'retune'],
      [9900, false, null],
      [10000, false, 'retune'],
      [14000, false, 'retune'],
    ],
    retunes: 5,
    changes: 1,
  },
  {
    name: 'never locks: lost from the first poll',
    polls: [
      [0, false, 'lost'],
      [2000, false, 'retune'],
      [3000, false, 'retune'],
    ],
    retunes: 2,
    changes: 0,
  },
  {
    name: 'lock back resets the backoff',
    polls: [
      [0, false, 'lost'],
      [2000, false, 'retune'],
      [3000, false, 'retune'],
      [3100, true, 'locked'],
      [4000, false, 'lost'],
      [6000, false, 'retune'],
      [7000, false, 'retune'],
    ],
    retunes: 4,
    changes: 2,
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const w = new LockWatch(policy);
    t.same(
      c.polls.map(([now, lock]) => w.feed(lock, now)),
      c.polls.map(([, , e]) => e),
    );
    t.equal(w.retunes, c.retunes);
    t.equal(w.lockChanges, c.changes);
  });
}
