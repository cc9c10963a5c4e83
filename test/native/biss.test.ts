// The BISS descrambler (native/ts/biss.{h,cc} over libdvbcsa, façade src/native/biss.ts): key
// forms, a two-programme MPTS scrambled with libdvbcsa and descrambled byte-exact (BISS-1 and
// the 16-digit form, packets with adaptation fields included), a wrong key shown as still
// scrambled, VLC's own DVB-CSA as a second descrambler of our fixture, and a T2-MI carrier
// target (-(n+1)): the carrier PID of an outer TS descrambled byte-exact.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { BissDescrambler, bissControlWord, bissScramble } from '../../src/native/biss.ts';
import {
  frameHashes,
  haveVlc,
  makeTwoProgrammeTs,
  P101,
  P102,
  vlcDescramble,
} from '../helpers/biss.ts';
import { tempDir } from '../helpers/stream-host.ts';
import { encodeOuter } from '../helpers/t2mi-encode.ts';

const PKT = 188;
const KEY1 = '123456ABCDEF'; // BISS-1 → CW 12 34 56 9C AB CD EF 67
const KEYE = '0F1E2D3C4B5A6978'; // 16 digits: the CW as written
const dir = tempDir(t, 'sluice-biss-');
const clearFile = join(dir, 'clear.ts');
const clear = makeTwoProgrammeTs(clearFile);

function scrambled(): Buffer {
  const s = Buffer.from(clear);
  bissScramble(s, KEY1, P101.pids, 2);
  bissScramble(s, KEYE, P102.pids, 3);
  return s;
}

/** Feeds `buf` in chunks of `packets` packets (as the stream does, batch by batch). */
function feed(d: BissDescrambler, buf: Buffer, packets: number): void {
  for (let o = 0; o < buf.length; o += PKT * packets) {
    d.process(buf.subarray(o, Math.min(buf.length, o + PKT * packets)));
  }
}

function pidOf(b: Buffer, o: number): number {
  return ((b[o + 1]! & 0x1f) << 8) | b[o + 2]!;
}

t.test(
  'control words: BISS-1 gets its checksum bytes, 16 digits are taken as written',
  async (t) => {
    t.equal(bissControlWord(KEY1).toString('hex'), '1234569cabcdef67');
    t.equal(bissControlWord('ffffffffffff').toString('hex'), 'fffffffdfffffffd', 'sums mod 256');
    t.equal(bissControlWord(KEYE).toString('hex'), KEYE.toLowerCase());
    t.equal(
      bissControlWord('1122330044556600').toString('hex'),
      '1122330044556600',
      'checksums as given',
    );
    for (const bad of ['', '12345', '1234567890123', '12345678901234567', 'GG3456ABCDEF']) {
      t.throws(() => bissControlWord(bad), { code: 'ERR_NATIVE_ARG' }, `refused: ${bad}`);
    }
    t.throws(() => new BissDescrambler([{ pnr: 0, key: KEY1 }]), { code: 'ERR_NATIVE_ARG' });
    t.ok(BissDescrambler.batchSize > 0, `libdvbcsa batch of ${BissDescrambler.batchSize}`);
  },
);

t.test('the fixture is really scrambled, adaptation-field packets included', async (t) => {
  const s = scrambled();
  let total = 0;
  let withAf = 0;
  for (let o = 0; o < s.length; o += PKT) {
    if (s[o + 3]! >> 6 === 0) continue;
    total++;
    if (s[o + 3]! & 0x20) withAf++;
  }
  t.ok(total > 500, `${total} scrambled packets`);
  t.ok(withAf > 20, `${withAf} of them with an adaptation field (PCR, stuffing)`);
  t.notOk(s.equals(clear));
});

t.test('BISS-1 and 16-digit keys: byte-exact descrambling, status descrambling', async (t) => {
  for (const chunk of [1, 7, 64, 1000]) {
    const s = scrambled();
    const d = new BissDescrambler([
      { pnr: 101, key: KEY1 },
      { pnr: 102, key: KEYE },
    ]);
    feed(d, s, chunk);
    t.ok(s.equals(clear), `byte-exact in chunks of ${chunk} packets`);
    const st = d.stats();
    t.equal(st.descrambled, st.scrambled);
    t.equal(st.notTargeted, 0);
    t.same(st.stillScrambledPids, []);
    t.same(
      st.targets.map((x) => [x.pnr, x.key, x.state, x.pmtPid, x.pids, x.pesBad, x.stillScrambled]),
      [
        [101, 'BISS-1', 'descrambling', 0x1000, P101.pids, 0, 0],
        [102, 'BISS-E', 'descrambling', 0x1001, P102.pids, 0, 0],
      ],
    );
    t.ok(
      st.targets.every((x) => x.pesOk > 20),
      'PES starts checked',
    );
  }
});

t.test(
  'a wrong key shows as still scrambled; an untargeted programme passes scrambled',
  async (t) => {
    const s = scrambled();
    const d = new BissDescrambler([{ pnr: 101, key: '123456ABCDEE' }]);
    feed(d, s, 100);
    const st = d.stats();
    const x = st.targets[0]!;
    t.equal(x.state, 'still scrambled');
    t.equal(x.pesOk, 0);
    t.ok(x.pesBad > 20 && x.stillScrambled === x.descrambled, 'every packet still scrambled');
    t.ok(st.notTargeted > 0, 'programme 102 has no target');
    t.same(st.stillScrambledPids, [...P101.pids, ...P102.pids]);
    // Programme 102 untouched, its scrambling bits kept.
    const orig = scrambled();
    for (let o = 0; o < s.length; o += PKT) {
      if (P102.pids.includes(pidOf(s, o))) {
        t.ok(s.subarray(o, o + PKT).equals(orig.subarray(o, o + PKT)));
        break;
      }
    }
  },
);

t.test('targets: not in the multiplex, clear programme, PSI packets left alone', async (t) => {
  const d = new BissDescrambler([
    { pnr: 999, key: KEY1 },
    { pnr: 101, key: KEY1 },
  ]);
  const c = Buffer.from(clear);
  d.process(c);
  t.ok(c.equals(clear), 'a clear stream passes unchanged');
  const st = d.stats();
  t.equal(st.targets[0]!.state, 'not in multiplex');
  t.equal(st.targets[1]!.state, 'clear');
  t.ok(st.targets[1]!.clear > 0);
  const fresh = new BissDescrambler([{ pnr: 101, key: KEY1 }]);
  t.equal(fresh.stats().targets[0]!.state, 'waiting', 'before a PAT');
  t.equal(fresh.process(Buffer.alloc(100)), 0, 'less than a packet: nothing');
});

t.test('a T2-MI carrier target (-(n+1)): the carrier PID descrambled byte-exact', async (t) => {
  // The clear two-programme TS as PLP 0 and PLP 1's inner stream, on carrier PID 0x1000
  // (signalled by programme 1's PMT on 0x100; PCR on 0x1001).
  const outer = encodeOuter({
    plps: [
      { plp: 0, ts: clear },
      { plp: 1, ts: clear.subarray(0, PKT * 200) },
    ],
    dfl: 3000,
    seconds: 2,
  });
  const s = Buffer.from(outer);
  const n = bissScramble(s, KEY1, [0x1000], 3);
  t.ok(n > 500, `${n} carrier packets scrambled`);
  for (const chunk of [1, 64, 1000]) {
    const d = new BissDescrambler([{ pnr: -1, key: KEY1 }]);
    const buf = Buffer.from(s);
    feed(d, buf, chunk);
    t.ok(buf.equals(outer), `byte-exact in chunks of ${chunk} packets`);
    const st = d.stats();
    t.equal(st.descrambled, n);
    t.same(st.stillScrambledPids, []);
    const x = st.targets[0]!;
    t.same(
      [x.pnr, x.key, x.state, x.pmtPid, x.pids, x.carrierPid, x.pesBad, x.stillScrambled],
      [-1, 'BISS-1', 'descrambling', 0x100, [0x1000], 0x1000, 0, 0],
    );
    t.ok(x.pesOk > 20, `${x.pesOk} T2-MI headers checked`);
  }
  // PLP 1's target takes the same carrier (one carrier holds every PLP); a programme target
  // beside it still works on its own PIDs.
  const d = new BissDescrambler([
    { pnr: -2, key: KEYE },
    { pnr: 1, key: KEYE },
  ]);
  const buf = Buffer.from(s);
  d.process(buf);
  const st = d.stats();
  t.same(
    st.targets.map((x) => [x.pnr, x.state, x.pids]),
    [
      [-2, 'still scrambled', [0x1000]],
      [1, 'waiting', []],
    ],
    'a wrong key on the carrier: still scrambled (the carrier is the carrier target’s)',
  );
  t.ok(st.targets[0]!.pesBad > 20 && st.targets[0]!.pesOk < 3, 'T2-MI headers are noise');
  t.same(st.stillScrambledPids, [0x1000]);
  t.notOk(buf.equals(outer));
  // Two carrier targets: the first takes the one carrier with its key, the second gets none.
  const two = new BissDescrambler([
    { pnr: -1, key: KEY1 },
    { pnr: -2, key: KEYE },
  ]);
  const b2 = Buffer.from(s);
  two.process(b2);
  t.ok(b2.equals(outer), 'descrambled with the first carrier target’s key');
  t.same(
    two.stats().targets.map((x) => [x.pnr, x.state, x.pids, x.descrambled > 0]),
    [
      [-1, 'descrambling', [0x1000], true],
      [-2, 'waiting', [], false],
    ],
  );
  // No carrier in the multiplex: "not in multiplex" once every PMT was read.
  const plain = new BissDescrambler([{ pnr: -1, key: KEY1 }]);
  const c = Buffer.from(clear);
  plain.process(c);
  t.ok(c.equals(clear));
  const p = plain.stats().targets[0]!;
  t.same([p.state, p.pids, p.carrierPid], ['not in multiplex', [], -1]);
  const fresh = new BissDescrambler([{ pnr: -256, key: KEY1 }]);
  t.equal(fresh.stats().targets[0]!.state, 'waiting', 'before a PAT');
  for (const bad of [0, -257, 65536]) {
    t.throws(() => new BissDescrambler([{ pnr: bad, key: KEY1 }]), { code: 'ERR_NATIVE_ARG' });
  }
});

t.test('VLC (--ts-csa-ck) descrambles our fixture into the source frames', async (t) => {
  // A peer the set-up installs: missing, it is a failure to fix, never a skipped check.
  t.ok(haveVlc(), 'cvlc is installed (scripts/setup installs vlc-bin)');
  if (!haveVlc()) return;
  for (const [key, cw] of [
    [KEY1, '1234569CABCDEF67'],
    [KEYE, KEYE],
  ] as const) {
    const s = Buffer.from(clear);
    bissScramble(s, key, [...P101.pids, ...P102.pids], 2);
    const file = join(dir, `scrambled-${key.length}.ts`);
    writeFileSync(file, s);
    const out = vlcDescramble(dir, file, cw);
    const ours = Buffer.from(s);
    new BissDescrambler([
      { pnr: 101, key },
      { pnr: 102, key },
    ]).process(ours);
    t.ok(ours.equals(clear), `${key.length} digits: ours byte-exact`);
    const want = new Set(frameHashes(clearFile, '0:p:101:v:0'));
    const vlc = frameHashes(out, '0:v:0');
    // VLC's remux drops a varying share of frames (its decoder buffering); what counts is
    // that what it descrambled decodes into the source's frames.
    t.ok(vlc.length >= 10, `VLC decoded ${vlc.length} of ${want.size} frames`);
    t.ok(
      vlc.every((h) => want.has(h)),
      `${key.length} digits: every frame VLC descrambled is a source frame`,
    );
    // Audio is not compared: VLC's remux re-times its audio unevenly (in one run of three none of
    // its 39 decoded frames lined up with the source's, in the others all 85 did), so frame
    // hashes say more about VLC than about the key. Our own output is byte-exact above, audio
    // PIDs included.
    if (key === KEY1) {
      // The check is not vacuous: VLC with another control word yields no source frame.
      const wrong = frameHashes(vlcDescramble(dir, file, '1234569CABCDEE66'), '0:v:0');
      t.equal(wrong.filter((h) => want.has(h)).length, 0, 'a wrong CW: no source frame');
    }
  }
});
