// The failover policy as a pure function of the inputs' health: which input comes next
// (cyclic, skipping what cannot be tried, preferring one already delivering), when the active
// input is left (unusable, silent past stream-timeout, too many priority-1 errors) and when the
// fallback check takes the primary back.
import t from 'tap';
import {
  checkActive,
  checkPrimary,
  type FailoverSettings,
  type InputHealth,
  nextInput,
  pickNext,
} from '../../src/engine/failover.ts';

/** A healthy open input delivering valid TS; `over` changes what a case is about. */
const ok = (over: Partial<InputHealth> = {}): InputHealth => ({
  supported: true,
  usable: true,
  openFor: 60_000,
  alive: true,
  errorRate: 0,
  ...over,
});
const unsupported = ok({ supported: false, usable: false, openFor: -1, alive: false });
const dead = ok({ alive: false });
const unusable = ok({ usable: false, alive: false, openFor: -1 });

const S: FailoverSettings = { streamTimeoutMs: 2000, errorRate: 20 };

t.test('nextInput: the next input that can be tried, cyclic', async (t) => {
  const cases: Array<[string, InputHealth[], number, number]> = [
    ['the one after', [ok(), ok(), ok()], 0, 1],
    ['wraps around from the last', [ok(), ok(), ok()], 2, 0],
    ['skips an unsupported input', [ok(), unsupported, ok()], 0, 2],
    ['skips unsupported inputs across the wrap', [ok(), unsupported, ok(), unsupported], 2, 0],
    ['does not look at health (a dead input can be tried)', [ok(), dead, ok()], 0, 1],
    ['does not look at usable either', [ok(), unusable, ok()], 0, 1],
    ['itself when the others are unsupported', [ok(), unsupported, unsupported], 0, 0],
    ['itself when it is the only input', [ok()], 0, 0],
    ['from an unsupported input to the supported one', [unsupported, ok()], 0, 1],
    ['itself when nothing is supported', [unsupported, unsupported], 1, 1],
  ];
  for (const [name, inputs, from, want] of cases) t.equal(nextInput(inputs, from), want, name);
});

t.test('pickNext: an input already delivering first, else the next one', async (t) => {
  const cases: Array<[string, InputHealth[], number, number]> = [
    ['the next when it delivers', [ok(), ok(), ok()], 0, 1],
    ['past a dead input to one delivering', [ok(), dead, ok()], 0, 2],
    ['wraps to a delivering primary', [ok(), dead, dead], 2, 0],
    ['past a delivering but unusable input', [dead, ok({ usable: false }), ok()], 0, 2],
    ['past an unsupported input', [dead, ok({ supported: false }), ok()], 0, 2],
    ['none delivering: simply the next', [dead, dead, dead], 0, 1],
    ['none delivering: the next supported', [dead, unsupported, dead], 0, 2],
    ['none delivering, wrapping', [dead, dead, dead], 2, 0],
    ['never itself while another can be tried', [ok(), dead], 0, 1],
    ['itself when it is the only input', [ok()], 0, 0],
    ['itself when the others are unsupported', [dead, unsupported], 0, 0],
  ];
  for (const [name, inputs, from, want] of cases) t.equal(pickNext(inputs, from), want, name);
});

t.test('checkActive: when the active input is left, where to and why', async (t) => {
  const cases: Array<[string, InputHealth[], number, FailoverSettings, unknown]> = [
    ['healthy: stays', [ok(), ok()], 0, S, null],
    ['no such input: no decision', [ok()], 3, S, null],
    ['no inputs: no decision', [], 0, S, null],
    ['unsupported: left', [unsupported, ok()], 0, S, { to: 1, reason: 'input unusable' }],
    ['unusable: left', [unusable, ok()], 0, S, { to: 1, reason: 'input unusable' }],
    ['unusable but nowhere to go: stays', [unusable], 0, S, null],
    ['unusable, the others unsupported: stays', [unusable, unsupported], 0, S, null],
    [
      'unusable: to the one delivering, not the next',
      [unusable, dead, ok()],
      0,
      S,
      { to: 2, reason: 'input unusable' },
    ],
    [
      'silent within stream-timeout: stays',
      [ok({ alive: false, openFor: 1999 }), ok()],
      0,
      S,
      null,
    ],
    [
      'silent for exactly stream-timeout: left',
      [ok({ alive: false, openFor: 2000 }), ok()],
      0,
      S,
      { to: 1, reason: 'no valid TS for 2 s' },
    ],
    [
      'the timeout in the reason in seconds',
      [ok({ alive: false, openFor: 9000 }), ok()],
      0,
      { ...S, streamTimeoutMs: 1500 },
      { to: 1, reason: 'no valid TS for 1.5 s' },
    ],
    ['silent, nowhere to go: stays', [ok({ alive: false })], 0, S, null],
    [
      'silent backup: to the next even if it is silent too (cyclic)',
      [dead, dead, dead],
      2,
      S,
      { to: 0, reason: 'no valid TS for 2 s' },
    ],
    [
      'silent: to an input already delivering',
      [dead, dead, ok()],
      0,
      S,
      { to: 2, reason: 'no valid TS for 2 s' },
    ],
    [
      'error rate above the limit: left',
      [ok({ errorRate: 25 }), ok()],
      0,
      S,
      { to: 1, reason: 'priority-1 errors 25.0/s above 20/s' },
    ],
    [
      'the error rate to one decimal',
      [ok({ errorRate: 20.04 }), ok()],
      0,
      S,
      { to: 1, reason: 'priority-1 errors 20.0/s above 20/s' },
    ],
    ['error rate at the limit: stays', [ok({ errorRate: 20 }), ok()], 0, S, null],
    ['error rate not judged yet: stays', [ok({ errorRate: null }), ok()], 0, S, null],
    [
      'quality failover off (0): stays at any rate',
      [ok({ errorRate: 1e6 }), ok()],
      0,
      { ...S, errorRate: 0 },
      null,
    ],
    ['too many errors, nowhere to go: stays', [ok({ errorRate: 25 })], 0, S, null],
    [
      'silent and erroring: silence is the reason',
      [ok({ alive: false, errorRate: 25 }), ok()],
      0,
      S,
      { to: 1, reason: 'no valid TS for 2 s' },
    ],
    [
      'silent within the timeout but erroring: the error rate is the reason',
      [ok({ alive: false, openFor: 100, errorRate: 25 }), ok()],
      0,
      S,
      { to: 1, reason: 'priority-1 errors 25.0/s above 20/s' },
    ],
    [
      'a closed input (openFor -1) that is still usable is not timed out',
      [ok({ alive: false, openFor: -1 }), ok()],
      0,
      S,
      null,
    ],
  ];
  for (const [name, inputs, active, s, want] of cases) {
    t.same(checkActive(inputs, active, s), want, name);
  }
});

t.test('checkPrimary: the fallback check takes the primary back once it is good', async (t) => {
  const back = { to: 0, reason: 'primary delivers valid TS again' };
  const cases: Array<[string, InputHealth[], number, FailoverSettings, unknown]> = [
    ['on the primary already: nothing to do', [ok(), ok()], 0, S, null],
    ['good primary while on a backup: back', [ok(), ok()], 1, S, back],
    ['from any backup', [ok(), dead, ok()], 2, S, back],
    ['a primary just opened to be probed counts', [ok({ openFor: 0 }), ok()], 1, S, back],
    ['no inputs: no decision', [], 1, S, null],
    ['primary unsupported: stays', [unsupported, ok()], 1, S, null],
    ['primary unusable: stays', [ok({ usable: false }), ok()], 1, S, null],
    ['primary silent: stays', [dead, ok()], 1, S, null],
    ['primary erroring above the limit: stays', [ok({ errorRate: 21 }), ok()], 1, S, null],
    ['primary at the limit: back', [ok({ errorRate: 20 }), ok()], 1, S, back],
    ['primary not judged yet: back', [ok({ errorRate: null }), ok()], 1, S, back],
    [
      'quality failover off: back at any rate',
      [ok({ errorRate: 1e6 }), ok()],
      1,
      { ...S, errorRate: 0 },
      back,
    ],
    ['the backup’s health does not matter', [ok(), dead], 1, S, back],
  ];
  for (const [name, inputs, active, s, want] of cases) {
    t.same(checkPrimary(inputs, active, s), want, name);
  }
});
