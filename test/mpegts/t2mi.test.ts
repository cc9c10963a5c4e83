// T2-MI decapsulation against our own encoder (test/helpers/t2mi-encode.ts): inner TS round
// trips byte-exact (one PLP, two PLPs of one carrier, normal and high efficiency mode, null
// packet deletion, UPs split across frames), the carrier found from the PMT or given, and
// damage (CRC errors, lost and truncated packets, bad BBHEADERs, garbage) counted without a
// crash, the output staying whole packets of the input in order.
import t from 'tap';
import { T2miReader } from '../../src/mpegts/t2mi.ts';
import {
  bbFramePacket,
  bbFrames,
  carrierPackets,
  encodeOuter,
  t2miPacket,
  t2miStream,
} from '../helpers/t2mi-encode.ts';
import { crc32mpeg, nullPacket, packet, pat, pmt, psiPackets } from '../helpers/ts-craft.ts';

const PKT = 188;

/** A small inner TS: PAT/PMT for programme `pnr`, payload packets of pseudo-random bytes, null
 *  packets now and then (runs of them too). */
function innerTs(pnr: number, n: number, seed: number): Buffer {
  let x = seed;
  const rnd = () => {
    x = (x * 1103515245 + 12345) >>> 0;
    return x >>> 16;
  };
  const out: Buffer[] = [];
  const cc = { pat: { n: 0 }, pmt: { n: 0 }, es: 0 };
  for (let i = 0; i < n; i++) {
    if (i % 50 === 0) {
      out.push(...psiPackets(0, [pat([{ pnr, pid: 0x100 }])], cc.pat));
      out.push(...psiPackets(0x100, [pmt(pnr, 0x101, [{ type: 0x1b, pid: 0x101 }])], cc.pmt));
    }
    const r = rnd() % 10;
    if (r === 0) {
      for (let k = 0; k < 1 + (rnd() % 4); k++) out.push(nullPacket());
      continue;
    }
    const payload = Buffer.alloc(184);
    for (let k = 0; k < 184; k++) payload[k] = rnd() & 0xff;
    out.push(packet({ pid: 0x101, cc: cc.es++ & 15, pusi: r === 1, payload }));
  }
  return Buffer.concat(out);
}

/** Feed `outer` in odd-sized aligned chunks; collect each PLP's output. */
function decap(
  outer: Buffer,
  plps: number[],
  carrierPid?: number,
): { reader: T2miReader; got: Map<number, Buffer> } {
  const reader = new T2miReader(carrierPid === undefined ? {} : { carrierPid });
  const parts = new Map<number, Buffer[]>();
  for (const p of plps) {
    parts.set(p, []);
    reader.addPlp(p, (b) => parts.get(p)!.push(Buffer.from(b)));
  }
  for (let o = 0; o < outer.length; o += PKT * 7) reader.push(outer.subarray(o, o + PKT * 7));
  const got = new Map<number, Buffer>();
  for (const [p, list] of parts) got.set(p, Buffer.concat(list));
  return { reader, got };
}

/** Whether every packet of `out` is a packet of `src`, in the same order. */
function subsequence(out: Buffer, src: Buffer): boolean {
  let j = 0;
  for (let o = 0; o < out.length; o += PKT) {
    const pk = out.subarray(o, o + PKT);
    while (j < src.length && !src.subarray(j, j + PKT).equals(pk)) j += PKT;
    if (j >= src.length) return false;
    j += PKT;
  }
  return true;
}

t.test('one PLP round-trips byte-exact, carrier found from the PMT', async (t) => {
  const inner = innerTs(101, 2000, 1);
  const outer = encodeOuter({ plps: [{ plp: 0, ts: inner }], dfl: 1000, seconds: 1 });
  const { reader, got } = decap(outer, [0]);
  t.ok(got.get(0)!.equals(inner), 'the inner TS, byte for byte');
  const st = reader.stats();
  t.equal(st.mode, 'automatic');
  t.equal(st.carrier, 'found');
  t.equal(st.pid, 0x1000);
  t.equal(st.crcErrors, 0);
  t.equal(st.lostPackets, 0);
  t.equal(st.badFrames, 0);
  t.equal(st.truncated, 0);
  t.ok(st.t2miPackets > st.bbFrames, 'other packet types counted, skipped');
  t.equal(reader.plpStats(0)!.mode, 'normal');
  t.equal(reader.plpStats(0)!.packetsOut, inner.length / PKT);
});

t.test('two PLPs of one carrier: each byte-exact (NPD, HEM, DFLs that split UPs)', async (t) => {
  for (const dfl of [187, 1000, 3001, 7000]) {
    const a = innerTs(101, 1500, 2);
    const b = innerTs(202, 900, 3);
    const outer = encodeOuter({
      plps: [
        { plp: 0, ts: a },
        { plp: 3, ts: b, npd: true, hem: true },
      ],
      dfl,
      seconds: 1,
      carrierPid: 0x1234,
    });
    const { reader, got } = decap(outer, [0, 3]);
    t.ok(got.get(0)!.equals(a), `dfl ${dfl}: PLP 0`);
    t.ok(got.get(3)!.equals(b), `dfl ${dfl}: PLP 3 (null packets put back)`);
    t.ok(reader.plpStats(3)!.nullsInserted > 0);
    t.equal(reader.plpStats(3)!.mode, 'high-efficiency');
    t.equal(reader.stats().pid, 0x1234);
  }
});

t.test('normal mode with ISSY (2 and 3 bytes) and NPD: byte-exact', async (t) => {
  for (const dfl of [190, 1000]) {
    const a = innerTs(7, 1200, 11);
    const outer = encodeOuter({
      plps: [{ plp: 2, ts: a, issy: true, npd: true }],
      dfl,
      seconds: 1,
    });
    const { reader, got } = decap(outer, [2]);
    t.ok(got.get(2)!.equals(a), `dfl ${dfl}`);
    t.equal(reader.plpStats(2)!.resyncs, 0);
  }
});

t.test('a PMT that moves the carrier is followed', async (t) => {
  const a = innerTs(1, 400, 12);
  const b = innerTs(1, 400, 13);
  const first = encodeOuter({ plps: [{ plp: 0, ts: a }], seconds: 1, carrierPid: 0x1000 });
  const second = encodeOuter({ plps: [{ plp: 0, ts: b }], seconds: 1, carrierPid: 0x1100 });
  const { reader, got } = decap(Buffer.concat([first, second]), [0]);
  t.equal(reader.stats().pid, 0x1100);
  const out = got.get(0)!;
  t.ok(out.subarray(0, a.length).equals(a), 'the first carrier');
  t.ok(subsequence(out.subarray(a.length), b), 'then the second one');
  t.ok(out.length > a.length + b.length / 2);
});

t.test('manual carrier PID; a PLP nobody asked for is skipped', async (t) => {
  const a = innerTs(1, 300, 4);
  const b = innerTs(2, 300, 5);
  const carrier = carrierPackets(
    t2miStream({
      plps: [
        { plp: 0, ts: a },
        { plp: 1, ts: b },
      ],
      seconds: 1,
    }),
    0x200,
  );
  const { reader, got } = decap(Buffer.concat(carrier), [1], 0x200);
  t.ok(got.get(1)!.equals(b));
  t.equal(reader.stats().mode, 'manual');
  t.equal(reader.plpStats(0), undefined);
});

t.test('no carrier in the tables: absent', async (t) => {
  const plain = innerTs(5, 200, 6);
  const { reader, got } = decap(plain, [0]);
  t.equal(reader.stats().carrier, 'absent');
  t.equal(got.get(0)!.length, 0);
});

/** T2-MI packets of one PLP to damage. */
function packets(inner: Buffer, dfl = 1000): Buffer[] {
  return bbFrames({ plp: 0, ts: inner }, dfl).map((bb, i) => bbFramePacket(i, i, 0, bb));
}

function reCrc(p: Buffer): Buffer {
  p.writeUInt32BE(crc32mpeg(p.subarray(0, p.length - 4)), p.length - 4);
  return p;
}

t.test('damage is counted, the output stays whole packets of the input', async (t) => {
  const inner = innerTs(101, 1500, 7);
  const run = (list: Buffer[], edit?: (carrier: Buffer[]) => Buffer[]) => {
    let carrier = carrierPackets(list, 0x300);
    if (edit) carrier = edit(carrier);
    const r = decap(Buffer.concat(carrier), [0], 0x300);
    t.ok(subsequence(r.got.get(0)!, inner), 'output: packets of the input, in order');
    t.ok(r.got.get(0)!.length > inner.length / 2, 'most of it still comes through');
    return r.reader.stats();
  };
  {
    const list = packets(inner);
    list[5]![100]! ^= 0xff; // a byte of the data field: the CRC-32 fails
    const st = run(list);
    t.equal(st.crcErrors, 1, 'CRC error counted');
    t.equal(st.lostPackets, 1, 'and the packet it cost shows as lost');
  }
  {
    const list = packets(inner);
    list.splice(7, 2);
    const st = run(list);
    t.equal(st.lostPackets, 2, 'two packets missing by packet_count');
    t.equal(st.crcErrors, 0);
  }
  {
    const st = run(packets(inner), (c) => [...c.slice(0, 30), ...c.slice(31)]);
    t.ok(st.truncated >= 1, 'a carrier TS packet lost: the T2-MI packet cut short is counted');
  }
  {
    const list = packets(inner);
    // A BBFrame cut short: the T2-MI payload ends before DFL says (CRC made right again).
    const p = list[4]!;
    const cut = Buffer.concat([p.subarray(0, p.length - 4 - 300), Buffer.alloc(4)]);
    cut.writeUInt16BE((cut.length - 10) * 8, 4);
    list[4] = reCrc(cut);
    const st = run(list);
    t.equal(st.truncated, 1, 'truncated frame counted');
  }
  {
    const list = packets(inner);
    list[3]![6 + 3 + 9]! ^= 0x40; // BBHEADER CRC-8 (T2-MI CRC made right again)
    reCrc(list[3]!);
    list[8]![6 + 3] = 0x40 | (list[8]![6 + 3]! & 0x3f); // MATYPE: not a TS (GCS)
    list[8]![6 + 3 + 9] = crc(list[8]!.subarray(9, 18));
    reCrc(list[8]!);
    const st = run(list);
    t.equal(st.badFrames, 2, 'bad BBHEADER and a non-TS frame counted');
  }
  {
    // A T2-MI packet claiming more bytes than the next pointer_field allows.
    const list = packets(inner);
    list[6]!.writeUInt16BE(list[6]!.readUInt16BE(4) + 800, 4);
    const st = run(list);
    t.ok(st.truncated >= 1, 'a length running into the next packet: truncated');
  }
});

function crc(b: Buffer): number {
  let c = 0;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 0x80 ? ((c << 1) ^ 0xd5) & 0xff : (c << 1) & 0xff;
  }
  return c;
}

t.test('garbage on the carrier does not crash', async (t) => {
  let x = 99;
  const junk = Buffer.alloc(PKT * 3000);
  for (let i = 0; i < junk.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    junk[i] = x >>> 24;
  }
  for (let o = 0; o < junk.length; o += PKT) {
    junk[o] = 0x47;
    junk[o + 1] = (junk[o + 1]! & 0x40) | 0x03; // PID 0x3xx
    junk[o + 2] = 0x00;
  }
  const r = decap(junk, [0, 1, 2], 0x300);
  t.ok(r.reader.stats().packetsIn === 3000);
  // With a valid packet in between: its frames still decode.
  const inner = innerTs(1, 200, 8);
  const good = carrierPackets(
    [t2miPacket(0x10, 0, Buffer.alloc(20)), ...packets(inner, 500)],
    0x300,
  );
  const mixed = Buffer.concat([junk.subarray(0, PKT * 50), ...good]);
  const m = decap(mixed, [0], 0x300);
  t.ok(subsequence(m.got.get(0)!, inner));
  t.ok(m.got.get(0)!.length >= inner.length - 2 * PKT, 'the good part decodes');
});
