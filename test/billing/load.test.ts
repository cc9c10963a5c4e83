// Issue 19's load case at the gate: 2,000 viewer sessions on 100 streams keep asking (a player
// reloads its playlist every second or two) over three verdict-cache periods; the billing
// server sees at most one authorisation per session per period, and every request is answered.
import pino from 'pino';
import t from 'tap';
import { ViewerGate } from '../../src/billing/gate.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { billingServer, startBilling } from '../helpers/billing.ts';

const VIEWERS = 2000;
const STREAMS = 100;
const CACHE_MS = 60_000;
const PERIODS = 3;
/** Requests per viewer per period: a reload every 2 s over a minute. */
const REQUESTS_PER_PERIOD = 30;
/** Viewers whose requests arrive at once. */
const WAVE = 250;

t.test('2,000 sessions on 100 streams, cached verdicts', async (t) => {
  const billing = await startBilling((r) => ({
    status: r.query.get('event') === 'auth' ? 200 : 204,
  }));
  t.teardown(billing.close);
  const clock = new ManualClock();
  const gate = new ViewerGate(clock, pino({ level: 'silent' }));
  gate.configure({
    verdictCacheMs: CACHE_MS,
    denialCacheMs: 10_000,
    whenUnavailable: 'keep',
    idleMs: 120_000,
    interimMs: 0,
    kickMs: 0,
    loopbackAnonymous: true,
  });
  gate.setServer(
    billingServer(billing.url, { name: 'load', timeoutMs: 10_000, accounting: false }),
  );
  const viewer = (i: number) => ({
    stream: `ch${i % STREAMS}`,
    ip: `10.0.${i >> 8}.${i & 255}`,
    userAgent: 'load',
    query: { token: `t${i}` },
  });
  let refused = 0;
  for (let period = 0; period < PERIODS; period++) {
    const asked = billing.events('auth').length;
    for (let round = 0; round < REQUESTS_PER_PERIOD; round++) {
      // Players arrive a few hundred at a time (all 2,000 in one instant would only measure the
      // billing server's accept queue).
      for (let from = 0; from < VIEWERS; from += WAVE) {
        const answers = await Promise.all(
          Array.from({ length: Math.min(WAVE, VIEWERS - from) }, (_, i) =>
            gate.admit(viewer(from + i)),
          ),
        );
        refused += answers.filter((a) => !a.ok).length;
      }
      clock.advance(CACHE_MS / REQUESTS_PER_PERIOD);
    }
    const inPeriod = billing.events('auth').length - asked;
    t.ok(
      inPeriod <= VIEWERS,
      `period ${period + 1}: billing asked ${inPeriod} times for ${VIEWERS} sessions`,
    );
  }
  t.equal(refused, 0, 'every request answered and allowed');
  t.equal(gate.sessions.size, VIEWERS, `${VIEWERS} sessions`);
  t.equal(
    new Set([...gate.sessions.all()].map((s) => s.stream)).size,
    STREAMS,
    `on ${STREAMS} streams`,
  );
  t.equal(
    gate.stats.cacheHits + gate.stats.asked,
    VIEWERS * (REQUESTS_PER_PERIOD * PERIODS),
    'every request was a cache hit or one question to billing',
  );
  t.equal(gate.stats.unavailable, 0, 'billing answered every question');
  gate.close();
});
