// Null packets and the CBR pacer (bitrate-mode 2/3 stuffing), and the façade's argument checks.
import t from 'tap';
import { NativeError } from '../../src/native/errors.ts';
import { CbrPacer, nullPackets } from '../../src/native/stuffing.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';

t.test('nullPackets: n packets on PID 0x1FFF, analysed as nulls', async (t) => {
  const b = nullPackets(100);
  t.equal(b.length, 100 * 188);
  const a = new TsAnalyzer({ dropNull: true });
  t.equal(a.push(b, 0).length, 0);
  t.equal(a.stats().nullPackets, 100);
  const c = nullPackets(3);
  c[4] = 1;
  t.not(nullPackets(3)[4], 1, 'each call returns a fresh buffer');
  t.throws(() => nullPackets(-1), { code: 'ERR_NATIVE_ARG' });
});

t.test('CbrPacer tops an output up to the target rate', async (t) => {
  const BITRATE = 3_008_000; // 2000 packets/s
  const p = new CbrPacer(BITRATE);
  let sent = 0;
  let stuffed = 0;
  for (let ms = 0; ms <= 1000; ms += 10) {
    sent += 188 * 5; // 500 packets/s of payload
    stuffed += p.due(sent, ms);
  }
  t.ok(Math.abs(sent / 188 + stuffed - 2000) <= 1, `${sent / 188} + ${stuffed} packets`);
  t.ok(p.overshootBits <= 5 * 188 * 8, 'only the first tick was ahead of the rate');
  const over = new CbrPacer(188 * 8 * 10); // 10 packets/s
  t.equal(over.due(188 * 100, 1000), 0);
  t.ok(over.overshootBits > 0, 'payload above the rate is reported');
  t.throws(() => new CbrPacer(0), NativeError);
});

t.test('TsAnalyzer checks its arguments before the native call', async (t) => {
  t.throws(() => new TsAnalyzer({ psiPids: [8192] }), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => new TsAnalyzer({ psiPids: 'some' as never }), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => new TsAnalyzer({ dropNull: 1 as never }), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => new TsAnalyzer({ pidTimeoutMs: -5 }), { code: 'ERR_NATIVE_ARG' });
  const a = new TsAnalyzer();
  t.throws(() => a.push('abc' as never), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => a.push(Buffer.alloc(1), Number.NaN), { code: 'ERR_NATIVE_ARG' });
  t.equal(a.push(new Uint8Array(10)).length, 0, 'a Uint8Array is accepted');
});
