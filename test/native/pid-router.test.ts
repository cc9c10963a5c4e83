// The demuxer's packet router: the native core's and the TypeScript reference do the same thing,
// packet for packet, including where they stop (a full region, a full deferred list, a stop code).
import t from 'tap';
import { TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import {
  isTableCode,
  type PacketRouter,
  ROUTE_DEFER,
  ROUTE_STOP,
  ROUTE_TABLE_FIRST,
  type RouteTables,
  routeCodes,
  routePackets,
} from '../../src/mpegts/pid-router.ts';
import { nativeRoutePackets } from '../../src/native/pid-router.ts';
import { packet } from '../helpers/ts-craft.ts';

/** PIDs 0x100..0x106 and the codes they get below; 0x1FF is dropped. */
const PIDS = [0x100, 0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x1ff];
/** Table PIDs: their payloads are one of two, so that some packets repeat the one before. */
const TABLE_PIDS = [0x105, 0x106];

function input(n: number): Buffer {
  let seed = 7;
  const parts: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const pid = PIDS[seed % PIDS.length]!;
    const fill = TABLE_PIDS.includes(pid) ? (seed >> 8) % 2 : i & 0xff;
    parts.push(packet({ pid, cc: i & 15, payload: Buffer.alloc(184, fill) }));
  }
  return Buffer.concat(parts);
}

function tables(region: number, deferred: number): RouteTables {
  const codes = routeCodes();
  codes[0x100] = 1;
  codes[0x101] = 2;
  codes[0x102] = 1;
  codes[0x103] = ROUTE_DEFER;
  codes[0x104] = ROUTE_STOP;
  codes[0x105] = ROUTE_TABLE_FIRST;
  codes[0x106] = ROUTE_TABLE_FIRST + 2; // beyond `last`: always a stop
  return {
    codes,
    dst: Buffer.alloc(2 * region),
    region,
    lens: new Int32Array(2),
    deferred: new Int32Array(deferred),
    state: new Int32Array(1),
    last: Buffer.alloc(2 * TS_PACKET_SIZE),
  };
}

/** Drive a router as the splitter does; returns everything it produced and every stop. */
function drive(router: PacketRouter, src: Buffer, t: RouteTables) {
  const out: Buffer[][] = [[], []];
  const stops: number[] = [];
  const deferred: number[] = [];
  const flush = (k: number) => {
    out[k]!.push(Buffer.from(t.dst.subarray(k * t.region, k * t.region + t.lens[k]!)));
    t.lens[k] = 0;
  };
  let o = 0;
  while (o < src.length) {
    o = router(src, o, src.length, t);
    if (o >= src.length) break;
    stops.push(o);
    const code = t.codes[((src[o + 1]! & 0x1f) << 8) | src[o + 2]!]!;
    if (code === 1 || code === 2) flush(code - 1);
    else if (code === ROUTE_DEFER) {
      deferred.push(...t.deferred.subarray(0, t.state[0]!));
      t.state[0] = 0;
    } else {
      // A stop packet: the caller handles what was noted, then it (as the splitter does).
      deferred.push(...t.deferred.subarray(0, t.state[0]!));
      t.state[0] = 0;
      o += TS_PACKET_SIZE;
    }
  }
  deferred.push(...t.deferred.subarray(0, t.state[0]!));
  flush(0);
  flush(1);
  return { out: out.map((b) => Buffer.concat(b)), stops, deferred, last: t.last };
}

t.test('native and TypeScript routers: same output, same stops', async (t) => {
  const src = input(2000);
  for (const [region, deferred] of [
    [2 * TS_PACKET_SIZE, 3],
    [64 * TS_PACKET_SIZE, 1024],
  ] as const) {
    const js = drive(routePackets, src, tables(region, deferred));
    const native = drive(nativeRoutePackets, src, tables(region, deferred));
    t.same(native.stops, js.stops, `stops (region ${region}, deferred ${deferred})`);
    t.same(native.deferred, js.deferred, 'deferred offsets');
    t.ok(native.last.equals(js.last), 'the same last table packets kept');
    t.ok(native.out[0]!.equals(js.out[0]!), 'slot 0 bytes');
    t.ok(native.out[1]!.equals(js.out[1]!), 'slot 1 bytes');
    // What each slot got is exactly its PIDs' packets, in input order.
    const want = (pids: number[]) => {
      const parts: Buffer[] = [];
      for (let o = 0; o < src.length; o += TS_PACKET_SIZE) {
        if (pids.includes(((src[o + 1]! & 0x1f) << 8) | src[o + 2]!)) {
          parts.push(src.subarray(o, o + TS_PACKET_SIZE));
        }
      }
      return Buffer.concat(parts);
    };
    t.ok(native.out[0]!.equals(want([0x100, 0x102])), 'slot 0 = PIDs 0x100 and 0x102 in order');
    t.ok(native.out[1]!.equals(want([0x101])), 'slot 1 = PID 0x101');
  }
});

t.test('native router: bad arguments are refused', async (t) => {
  const tb = tables(4 * TS_PACKET_SIZE, 4);
  const src = input(4);
  t.throws(() => nativeRoutePackets(src, 1, src.length, tb), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => nativeRoutePackets(src, 0, src.length + 188, tb), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => nativeRoutePackets(src, 0, src.length, { ...tb, codes: new Uint8Array(10) }), {
    code: 'ERR_NATIVE_ARG',
  });
  t.throws(() => nativeRoutePackets(src, 0, src.length, { ...tb, dst: Buffer.alloc(10) }), {
    code: 'ERR_NATIVE_ARG',
  });
});

t.test('native router: tables the splitter replaced (grown regions) are bound again', async (t) => {
  const src = input(200);
  const tb = tables(64 * TS_PACKET_SIZE, 1024);
  const first = drive(nativeRoutePackets, src, tb);
  // New regions and fills, as ProgrammeSplitter.attach() makes them: routing must write there.
  const grown = { ...tables(32 * TS_PACKET_SIZE, 1024), codes: tb.codes, deferred: tb.deferred };
  Object.assign(tb, { dst: grown.dst, region: grown.region, lens: grown.lens });
  const again = drive(nativeRoutePackets, src, tb);
  const js = drive(routePackets, src, tables(32 * TS_PACKET_SIZE, 1024));
  t.ok(first.out[0]!.length > 0, 'slot 0 got packets before');
  t.same(again.stops, js.stops, 'stops with the new regions');
  t.ok(again.out[0]!.equals(js.out[0]!), 'slot 0 bytes in the new regions');
  t.ok(again.out[1]!.equals(js.out[1]!), 'slot 1 bytes in the new regions');
});

t.test(
  'table PIDs: a packet repeating the last of its PID is noted, any other stops',
  async (t) => {
    const tp = (pid: number, cc: number, fill: number) =>
      packet({ pid, cc, pusi: true, payload: Buffer.alloc(184, fill) });
    const src = Buffer.concat([
      tp(0x105, 0, 1), // new: stop, kept
      tp(0x105, 1, 1), // the same but for the counter: noted
      tp(0x105, 2, 2), // other bytes: stop, kept
      tp(0x105, 3, 2), // noted
      tp(0x105, 4, 1), // back to the first: other than the last, a stop
      tp(0x106, 5, 1), // a table code beyond `last`: always a stop
      tp(0x106, 6, 1),
    ]);
    for (const [name, router] of [
      ['TypeScript', routePackets],
      ['native', nativeRoutePackets],
    ] as const) {
      const tb = tables(8 * TS_PACKET_SIZE, 8);
      t.ok(isTableCode(tb.codes[0x105]!) && isTableCode(tb.codes[0x106]!));
      const r = drive(router, src, tb);
      const at = (...i: number[]) => i.map((k) => k * TS_PACKET_SIZE);
      t.same(r.stops, at(0, 2, 4, 5, 6), `${name}: stops at new packets`);
      t.same(r.deferred, at(1, 3), `${name}: repeats noted`);
      t.ok(
        r.last.subarray(0, TS_PACKET_SIZE).equals(src.subarray(4 * 188, 5 * 188)),
        `${name}: kept`,
      );
    }
  },
);
