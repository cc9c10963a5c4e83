// Null packets (bitrate-mode 2/3 stuffing), and the façade's argument checks.
import t from 'tap';
import { nullPackets } from '../../src/native/stuffing.ts';
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
