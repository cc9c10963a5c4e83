// AMF0 (Action Message Format 0, Adobe 2007): the encoding of RTMP commands and data messages.
// Pure; decoding is bounded (nesting depth, members per object, string and packet size) and a
// malformed packet throws Amf0Error — never a crash or an unbounded allocation.

export type AmfValue =
  | number
  | boolean
  | string
  | null
  | undefined
  | Date
  | AmfValue[]
  | { [key: string]: AmfValue };

export class Amf0Error extends Error {
  override name = 'Amf0Error';
}

/** Nesting of objects / arrays decoded at most. */
export const AMF0_MAX_DEPTH = 16;
/** Members of one object or elements of one array decoded at most. */
export const AMF0_MAX_MEMBERS = 4096;

const NUMBER = 0x00;
const BOOLEAN = 0x01;
const STRING = 0x02;
const OBJECT = 0x03;
const MOVIECLIP = 0x04;
const NULL = 0x05;
const UNDEFINED = 0x06;
const REFERENCE = 0x07;
const ECMA_ARRAY = 0x08;
const OBJECT_END = 0x09;
const STRICT_ARRAY = 0x0a;
const DATE = 0x0b;
const LONG_STRING = 0x0c;
const UNSUPPORTED = 0x0d;
const XML_DOCUMENT = 0x0f;
const TYPED_OBJECT = 0x10;
const AVMPLUS = 0x11;

/** Decode every value of an AMF0 packet (a command: name, transaction id, arguments …). */
export function decodeAmf0(buf: Uint8Array): AmfValue[] {
  const r = new Reader(Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength));
  const out: AmfValue[] = [];
  while (r.pos < r.b.length) {
    if (out.length >= AMF0_MAX_MEMBERS) throw new Amf0Error('AMF0: too many values');
    out.push(r.value(0));
  }
  return out;
}

class Reader {
  pos = 0;
  constructor(readonly b: Buffer) {}

  private need(n: number): void {
    if (this.pos + n > this.b.length) throw new Amf0Error('AMF0: packet truncated');
  }

  private u8(): number {
    this.need(1);
    return this.b[this.pos++]!;
  }

  private u16(): number {
    this.need(2);
    const v = this.b.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  private u32(): number {
    this.need(4);
    const v = this.b.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  private f64(): number {
    this.need(8);
    const v = this.b.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }

  private str(n: number): string {
    this.need(n);
    const s = this.b.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  value(depth: number): AmfValue {
    const marker = this.u8();
    switch (marker) {
      case NUMBER:
        return this.f64();
      case BOOLEAN:
        return this.u8() !== 0;
      case STRING:
        return this.str(this.u16());
      case LONG_STRING:
      case XML_DOCUMENT:
        return this.str(this.u32());
      case NULL:
        return null;
      case UNDEFINED:
      case UNSUPPORTED:
        return undefined;
      case OBJECT:
        return this.object(depth);
      case TYPED_OBJECT:
        this.str(this.u16()); // class name
        return this.object(depth);
      case ECMA_ARRAY:
        this.u32(); // count hint: not trusted, the end marker ends it
        return this.object(depth);
      case STRICT_ARRAY: {
        const n = this.u32();
        if (depth + 1 > AMF0_MAX_DEPTH) throw new Amf0Error('AMF0: nested too deep');
        if (n > AMF0_MAX_MEMBERS || n > this.b.length - this.pos) {
          throw new Amf0Error(`AMF0: array of ${n} elements`);
        }
        const a: AmfValue[] = [];
        for (let i = 0; i < n; i++) a.push(this.value(depth + 1));
        return a;
      }
      case DATE: {
        const ms = this.f64();
        this.u16(); // time zone, reserved
        return new Date(ms);
      }
      case REFERENCE:
        this.u16();
        return undefined;
      case MOVIECLIP:
      case AVMPLUS:
        throw new Amf0Error(`AMF0: type 0x${marker.toString(16)} not supported`);
      default:
        throw new Amf0Error(`AMF0: unknown type 0x${marker.toString(16)}`);
    }
  }

  private object(depth: number): Record<string, AmfValue> {
    if (depth + 1 > AMF0_MAX_DEPTH) throw new Amf0Error('AMF0: nested too deep');
    const o: Record<string, AmfValue> = Object.create(null);
    for (let n = 0; ; n++) {
      if (n > AMF0_MAX_MEMBERS) throw new Amf0Error('AMF0: object with too many members');
      const key = this.str(this.u16());
      if (key === '') {
        this.need(1);
        if (this.b[this.pos] === OBJECT_END) {
          this.pos++;
          return o;
        }
      }
      o[key] = this.value(depth + 1);
    }
  }
}

/** Encode values one after the other (a command or data message body). */
export function encodeAmf0(...values: AmfValue[]): Buffer {
  const parts: Buffer[] = [];
  for (const v of values) write(parts, v, 0);
  return Buffer.concat(parts);
}

function write(parts: Buffer[], v: AmfValue, depth: number): void {
  if (depth > AMF0_MAX_DEPTH) throw new Amf0Error('AMF0: nested too deep');
  if (v === null) return void parts.push(Buffer.of(NULL));
  if (v === undefined) return void parts.push(Buffer.of(UNDEFINED));
  if (typeof v === 'number') {
    const b = Buffer.allocUnsafe(9);
    b[0] = NUMBER;
    b.writeDoubleBE(v, 1);
    return void parts.push(b);
  }
  if (typeof v === 'boolean') return void parts.push(Buffer.of(BOOLEAN, v ? 1 : 0));
  if (typeof v === 'string') {
    const s = Buffer.from(v, 'utf8');
    if (s.length > 0xffff) {
      const h = Buffer.allocUnsafe(5);
      h[0] = LONG_STRING;
      h.writeUInt32BE(s.length, 1);
      return void parts.push(h, s);
    }
    const h = Buffer.allocUnsafe(3);
    h[0] = STRING;
    h.writeUInt16BE(s.length, 1);
    return void parts.push(h, s);
  }
  if (v instanceof Date) {
    const b = Buffer.alloc(11);
    b[0] = DATE;
    b.writeDoubleBE(v.getTime(), 1);
    return void parts.push(b);
  }
  if (Array.isArray(v)) {
    const h = Buffer.allocUnsafe(5);
    h[0] = STRICT_ARRAY;
    h.writeUInt32BE(v.length, 1);
    parts.push(h);
    for (const e of v) write(parts, e, depth + 1);
    return;
  }
  parts.push(Buffer.of(OBJECT));
  for (const [k, e] of Object.entries(v)) {
    const key = Buffer.from(k, 'utf8');
    const h = Buffer.allocUnsafe(2);
    h.writeUInt16BE(Math.min(key.length, 0xffff));
    parts.push(h, key.subarray(0, 0xffff));
    write(parts, e, depth + 1);
  }
  parts.push(Buffer.of(0, 0, OBJECT_END));
}

/** An object-typed AMF value (for reading command arguments), else undefined. */
export function amfObject(v: AmfValue): Record<string, AmfValue> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date)
    ? v
    : undefined;
}
