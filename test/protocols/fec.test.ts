// SMPTE 2022-1 FEC, the pure parts: the header round trip (and the header-xor), the encoder's
// rows and staggered columns, 1-D and 2-D recovery (iterated row ↔ column), a loss that cannot
// be recovered, forged headers refused with a reason, and the payload cipher.
import t from 'tap';
import { PayloadCipher } from '../../src/protocols/fec/cipher.ts';
import { FecDecoder } from '../../src/protocols/fec/decoder.ts';
import { checkMatrix, FecEncoder } from '../../src/protocols/fec/encoder.ts';
import { buildFec, type FecPacket, parseFec } from '../../src/protocols/fec/header.ts';
import { parseRtp } from '../../src/protocols/rtp/packet.ts';

const SSRC = 0x1234abcd;

/** A media RTP datagram whose payload says which packet it is. */
function media(seq: number, size = 1316): Buffer {
  const b = Buffer.alloc(12 + size);
  b[0] = 0x80;
  b[1] = 33 | (seq % 7 === 0 ? 0x80 : 0);
  b.writeUInt16BE(seq & 0xffff, 2);
  b.writeUInt32BE((seq * 3003) >>> 0, 4);
  b.writeUInt32BE(SSRC, 8);
  for (let i = 12; i < b.length; i += 188) b[i] = 0x47;
  b.writeUInt32BE(seq, 13);
  b.fill(seq & 0xff, 20, 40);
  return b;
}

/** Encode `count` packets from `first` with L × D; returns media and FEC in send order. */
function encode(l: number, d: number, rows: boolean, first: number, count: number, xor = 0) {
  const out: { kind: 'media' | 'column' | 'row'; d: Buffer; seq?: number }[] = [];
  const enc = new FecEncoder({ l, d, rows, xor }, (kind, d) => out.push({ kind, d }));
  for (let i = 0; i < count; i++) {
    const m = media((first + i) & 0xffff);
    enc.push(m);
    out.push({ kind: 'media', d: m, seq: (first + i) & 0xffff });
  }
  return out;
}

/** Feed everything except the media sequence numbers in `drop`; returns what came out. */
function decode(stream: ReturnType<typeof encode>, drop: Set<number>, xor = 0) {
  const recovered: Buffer[] = [];
  const dec = new FecDecoder((d) => recovered.push(d));
  for (const x of stream) {
    if (x.kind === 'media') {
      if (drop.has(x.seq!)) continue;
      const p = parseRtp(x.d)!;
      dec.pushMedia(x.d, p.seq, p.ssrc);
    } else {
      const f = parseFec(x.d, xor);
      if (typeof f === 'string') throw new Error(f);
      dec.pushFec(f);
    }
  }
  return { dec, recovered };
}

t.test('header round trip, with and without header-xor', async (t) => {
  for (const xor of [0, 0x5a, 0xff]) {
    const payload = Buffer.from('abcdefgh');
    const d = buildFec(
      {
        row: false,
        seq: 65535,
        timestamp: 0xfffffffe,
        ssrc: 0,
        snBase: 40000,
        offset: 5,
        na: 6,
        lengthRecovery: 1316,
        ptRecovery: 33,
        tsRecovery: 0x89abcdef,
        pxccRecovery: 0x21,
        markerRecovery: 1,
        payload,
      },
      xor,
    );
    t.equal(d.length, 12 + 16 + 8);
    t.equal(d[1]! & 0x7f, 96, 'FEC payload type 96');
    const f = parseFec(d, xor) as FecPacket;
    t.match(f, {
      row: false,
      seq: 65535,
      snBase: 40000,
      offset: 5,
      na: 6,
      lengthRecovery: 1316,
      ptRecovery: 33,
      tsRecovery: 0x89abcdef,
      pxccRecovery: 0x21,
      markerRecovery: 1,
    });
    t.same(f.payload, payload);
    if (xor) t.type(parseFec(d, 0), 'string', `xor ${xor} headers do not parse without it`);
  }
});

t.test('forged headers are refused with a reason', async (t) => {
  const good = encode(5, 5, true, 100, 25).find((x) => x.kind === 'row')!.d;
  const forge = (i: number, v: number) => {
    const d = Buffer.from(good);
    d[12 + i] = v;
    return parseFec(d);
  };
  t.type(parseFec(good), 'object');
  t.match(parseFec(good.subarray(0, 20)), /shorter/);
  t.match(forge(4, 0x21), /E bit/);
  t.match(forge(6, 1), /mask/);
  t.match(forge(12, 0x48), /type/);
  t.match(forge(12, 0x41), /index/);
  t.match(forge(13, 2), /row FEC with offset 2/);
  t.match(forge(14, 21), /L at most 20/);
  t.match(forge(14, 0), /0/);
  const col = (offset: number, na: number) => {
    const d = Buffer.from(good);
    d[12 + 12] = 0;
    d[12 + 13] = offset;
    d[12 + 14] = na;
    return parseFec(d);
  };
  t.match(col(21, 4), /L at most 20/);
  t.match(col(4, 21), /D at most 20/);
  t.match(col(20, 6), /L × D = 120/);
  t.type(col(20, 5), 'object', '20 × 5 is within the limits');
  t.equal(checkMatrix(5, 5), '');
  t.match(checkMatrix(21, 4), /L/);
  t.match(checkMatrix(5, 3), /D/);
  t.match(checkMatrix(10, 11), /100/);
});

t.test('encoder: a row after each L packets, columns staggered over the next matrix', async (t) => {
  const s = encode(4, 5, true, 65530, 40);
  const rows = s.filter((x) => x.kind === 'row').map((x) => parseFec(x.d) as FecPacket);
  const cols = s.filter((x) => x.kind === 'column').map((x) => parseFec(x.d) as FecPacket);
  t.equal(rows.length, 10);
  t.same(
    rows.slice(0, 3).map((r) => [r.snBase, r.offset, r.na]),
    [
      [65530, 1, 4],
      [65534, 1, 4],
      [2, 1, 4],
    ],
    'rows wrap the sequence space',
  );
  t.same(
    cols.map((c) => [c.snBase, c.offset, c.na]),
    [
      [65530, 4, 5],
      [65531, 4, 5],
      [65532, 4, 5],
      [65533, 4, 5],
      [14, 4, 5],
    ],
    'the first matrix’s four columns, then the second’s first (the others still queued)',
  );
  // Column c completes with the packet of index 16 + c and leaves 1 + c·D packets later.
  const mediaBefore = s
    .map((x, i) =>
      x.kind === 'column' ? s.slice(0, i).filter((y) => y.kind === 'media').length : -1,
    )
    .filter((n) => n >= 0);
  t.same(mediaBefore, [17, 23, 29, 35, 37]);
});

t.test('1-D (column only): one loss per column recovered, bit for bit', async (t) => {
  const s = encode(5, 5, false, 1000, 75);
  const drop = new Set([1002, 1008, 1014, 1020]); // four columns of the first matrix
  const { dec, recovered } = decode(s, drop);
  t.equal(dec.stats.recovered, 4);
  t.equal(dec.stats.recoveredByColumn, 4);
  const bySeq = new Map(recovered.map((d) => [d.readUInt16BE(2), d]));
  for (const seq of drop) t.same(bySeq.get(seq), media(seq), `packet ${seq} rebuilt exactly`);
});

t.test('2-D: a row with two losses is repaired by columns, then rows finish', async (t) => {
  // Matrix 5 × 5 from 2000: losses 2000, 2001 (same row: rows alone cannot), 2005 (same
  // column as 2000: columns alone cannot). Row of 2005 fixes 2005 → column 0 fixes 2000 →
  // the first row fixes 2001 (or column 1 does).
  const s = encode(5, 5, true, 2000, 75);
  const drop = new Set([2000, 2001, 2005]);
  const { dec, recovered } = decode(s, drop);
  t.equal(dec.stats.recovered, 3, 'all three');
  const bySeq = new Map(recovered.map((d) => [d.readUInt16BE(2), d]));
  for (const seq of drop) t.same(bySeq.get(seq), media(seq));
  t.ok(dec.stats.recoveredByRow >= 1 && dec.stats.recoveredByColumn >= 1, 'both directions');
  t.equal(dec.window(), 2 * 25 + 5, 'the reorder window for 5 × 5');
});

t.test('a 2 × 2 square of losses cannot be recovered: nothing invented', async (t) => {
  const s = encode(5, 5, true, 3000, 75);
  const drop = new Set([3000, 3001, 3005, 3006]);
  const { dec, recovered } = decode(s, drop);
  t.equal(dec.stats.recovered, 0);
  t.equal(recovered.length, 0);
});

t.test(
  'the last packet of a row is recovered only once a later packet shows the hole',
  async (t) => {
    const recovered: Buffer[] = [];
    const dec = new FecDecoder((d) => recovered.push(d));
    const s = encode(5, 5, true, 10, 10);
    // Rows: 10..14 then its FEC, 15..19 then its FEC. Drop 14; the row FEC arrives "early".
    for (const x of s) {
      if (x.kind === 'media' && x.seq === 14) continue;
      if (x.kind === 'media') dec.pushMedia(x.d, x.seq!, SSRC);
      else dec.pushFec(parseFec(x.d) as FecPacket);
      if (x.kind === 'row') {
        t.equal(recovered.length, 0, 'not before a later packet arrived');
        break;
      }
    }
    dec.pushMedia(media(15), 15, SSRC);
    t.equal(recovered.length, 1);
    t.equal(recovered[0]!.readUInt16BE(2), 14);
  },
);

t.test('FEC far from the media, duplicates and inconsistent lengths are counted', async (t) => {
  const s = encode(5, 5, true, 500, 30);
  const { dec } = decode(s, new Set([503]));
  t.equal(dec.stats.recovered, 1);
  const row = s.find((x) => x.kind === 'row')!.d;
  const far = Buffer.from(row);
  far.writeUInt16BE(40000, 12); // SN base far away
  dec.pushFec(parseFec(far) as FecPacket);
  t.equal(dec.stats.fecOutOfWindow, 1);
  // A row FEC whose payload is shorter than the media it claims: unusable, not a crash.
  const short = buildFec({
    row: true,
    seq: 1,
    timestamp: 0,
    ssrc: 0,
    snBase: 600,
    offset: 1,
    na: 5,
    lengthRecovery: 0,
    ptRecovery: 0,
    tsRecovery: 0,
    pxccRecovery: 0,
    markerRecovery: 0,
    payload: Buffer.alloc(10),
  });
  for (const seq of [600, 601, 602, 604, 605]) dec.pushMedia(media(seq), seq, SSRC);
  dec.pushFec(parseFec(short) as FecPacket);
  t.equal(dec.stats.fecInconsistent, 1);
  t.equal(dec.stats.recovered, 1, 'nothing made up');
  t.notOk(dec.pushMedia(media(604), 604, SSRC), 'a duplicate is reported');
});

t.test('payload cipher: AES-128-CTR, per-packet counter, wrong key garbles', async (t) => {
  const a = new PayloadCipher('a passphrase of some length');
  const b = new PayloadCipher('another passphrase');
  const plain = media(7).subarray(12);
  const enc = a.apply(SSRC, 21021, 7, plain);
  t.not(enc[0], 0x47);
  t.same(a.apply(SSRC, 21021, 7, enc), plain, 'round trip');
  t.notSame(a.apply(SSRC, 21021, 8, plain), enc, 'another packet, another key stream');
  t.not(b.apply(SSRC, 21021, 7, enc)[0], 0x47, 'another passphrase does not decrypt');
  t.throws(() => new PayloadCipher('short'), /10 to 64/);
});
