// ISO BMFF box primitives: a box is a 32-bit size, a four-character type and a body.
// Every box writer in cmaf/ is a small function built on these two.

export function box(type: string, ...body: Buffer[]): Buffer {
  let size = 8;
  for (const b of body) size += b.length;
  const head = Buffer.allocUnsafe(8);
  head.writeUInt32BE(size, 0);
  head.write(type, 4, 4, 'latin1');
  return Buffer.concat([head, ...body], size);
}

/** A FullBox: version (8 bits) and flags (24 bits) before the body. */
export function fullBox(type: string, version: number, flags: number, ...body: Buffer[]): Buffer {
  const vf = Buffer.allocUnsafe(4);
  vf.writeUInt32BE(((version & 0xff) << 24) | (flags & 0xffffff), 0);
  return box(type, vf, ...body);
}

export function u8(v: number): Buffer {
  return Buffer.from([v & 0xff]);
}

export function u16(v: number): Buffer {
  const b = Buffer.allocUnsafe(2);
  b.writeUInt16BE(v & 0xffff);
  return b;
}

export function u32(v: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(v >>> 0);
  return b;
}

export function u64(v: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(v))));
  return b;
}

export function zeros(n: number): Buffer {
  return Buffer.alloc(n);
}

/** Unity transformation matrix used by mvhd and tkhd. */
export const UNITY_MATRIX = Buffer.from(
  [0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000].flatMap((v) => [...u32(v)]),
);

/** ISO 639-2/T code packed as three 5-bit letters (mdhd). */
export function packLanguage(lang: string | undefined): number {
  const code = /^[a-z]{3}$/.test(lang ?? '') ? lang! : 'und';
  return [...code].reduce((acc, c) => (acc << 5) | (c.charCodeAt(0) - 0x60), 0);
}
