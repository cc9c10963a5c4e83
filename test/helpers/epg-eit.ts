// Builds DVB EIT and TOT sections from known events for the EPG tests (EN 300 468 layouts).
import { writeBcdDuration, writeMjdTime } from '../../src/epg/dvb-time.ts';

export function crc32mpeg(buf: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of buf) {
    crc ^= b << 24;
    for (let i = 0; i < 8; i++)
      crc = crc & 0x80000000 ? ((crc << 1) ^ 0x04c11db7) >>> 0 : (crc << 1) >>> 0;
  }
  return crc >>> 0;
}

function withCrc(body: Buffer): Buffer {
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32mpeg(body));
  return Buffer.concat([body, crc]);
}

export function shortEvent(lang: string, name: Buffer, text: Buffer): Buffer {
  const body = Buffer.concat([
    Buffer.from(lang, 'latin1'),
    Buffer.from([name.length]),
    name,
    Buffer.from([text.length]),
    text,
  ]);
  return Buffer.concat([Buffer.from([0x4d, body.length]), body]);
}

export function extendedEvent(
  num: number,
  last: number,
  lang: string,
  text: Buffer,
  items: [Buffer, Buffer][] = [],
): Buffer {
  const itemBytes = Buffer.concat(
    items.map(([d, i]) => Buffer.concat([Buffer.from([d.length]), d, Buffer.from([i.length]), i])),
  );
  const body = Buffer.concat([
    Buffer.from([(num << 4) | last]),
    Buffer.from(lang, 'latin1'),
    Buffer.from([itemBytes.length]),
    itemBytes,
    Buffer.from([text.length]),
    text,
  ]);
  return Buffer.concat([Buffer.from([0x4e, body.length]), body]);
}

export function parentalRating(country: string, rating: number): Buffer {
  return Buffer.concat([
    Buffer.from([0x55, 4]),
    Buffer.from(country, 'latin1'),
    Buffer.from([rating]),
  ]);
}

export interface EventSpec {
  id: number;
  start: number;
  duration: number;
  descriptors: Buffer[];
}

export function eitSection(o: {
  tableId?: number;
  sid: number;
  tsid: number;
  onid: number;
  version?: number;
  section?: number;
  events: EventSpec[];
}): Buffer {
  const events = Buffer.concat(
    o.events.map((e) => {
      const d = Buffer.concat(e.descriptors);
      const head = Buffer.alloc(12);
      head.writeUInt16BE(e.id, 0);
      writeMjdTime(e.start).copy(head, 2);
      writeBcdDuration(e.duration).copy(head, 7);
      head.writeUInt16BE((4 << 13) | d.length, 10); // running
      return Buffer.concat([head, d]);
    }),
  );
  const len = 11 + events.length + 4;
  const h = Buffer.alloc(14);
  h[0] = o.tableId ?? 0x4e;
  h.writeUInt16BE(0xf000 | len, 1);
  h.writeUInt16BE(o.sid, 3);
  h[5] = 0xc0 | ((o.version ?? 0) << 1) | 1;
  h[6] = o.section ?? 0;
  h[7] = o.section ?? 0;
  h.writeUInt16BE(o.tsid, 8);
  h.writeUInt16BE(o.onid, 10);
  h[12] = o.section ?? 0;
  h[13] = o.tableId ?? 0x4e;
  return withCrc(Buffer.concat([h, events]));
}

/** TOT with one local_time_offset entry. */
export function totSection(utc: number, country: string, offsetMin: number): Buffer {
  const abs = Math.abs(offsetMin);
  const bcd = (n: number) => ((Math.floor(n / 10) << 4) | (n % 10)) & 0xff;
  const entry = Buffer.concat([
    Buffer.from(country, 'latin1'),
    Buffer.from([(0 << 2) | 0x02 | (offsetMin < 0 ? 1 : 0)]),
    Buffer.from([bcd(Math.floor(abs / 60)), bcd(abs % 60)]),
    writeMjdTime(utc),
    Buffer.from([bcd(Math.floor(abs / 60)), bcd(abs % 60)]),
  ]);
  const desc = Buffer.concat([Buffer.from([0x58, entry.length]), entry]);
  const body = Buffer.concat([
    writeMjdTime(utc),
    Buffer.from([0xf0 | (desc.length >> 8), desc.length & 0xff]),
    desc,
  ]);
  const h = Buffer.from([0x73, 0x70 | ((body.length + 4) >> 8), (body.length + 4) & 0xff]);
  return withCrc(Buffer.concat([h, body]));
}
