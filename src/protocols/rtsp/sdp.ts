// SDP (RFC 8866) as an RTSP DESCRIBE returns it, no I/O: the media sections with their payload
// format (a=rtpmap, a=fmtp) and control URL (a=control, resolved against the aggregate URL:
// Content-Base, else Content-Location, else the request URL — RFC 2326 C.1.1). Codec mapping of
// a media section to what the depacketizers take: H.264 (sprop-parameter-sets), HEVC
// (sprop-vps/sps/pps), AAC as mpeg4-generic (config=, sizeLength, indexLength, …) and MP2T.

/** Media sections beyond this many are ignored (counted in `dropped`). */
export const MAX_SDP_MEDIA = 16;

export type SdpCodec = 'h264' | 'hevc' | 'aac' | 'mp2t';

export interface SdpMedia {
  /** `video`, `audio`, … */
  type: string;
  port: number;
  proto: string;
  /** The first payload type listed (the one the client takes). */
  payloadType: number;
  /** From a=rtpmap (upper case), or the static payload type's name (33 → MP2T). */
  encoding: string;
  clockRate: number;
  channels: number;
  /** a=fmtp parameters of `payloadType`, names in lower case. */
  fmtp: Record<string, string>;
  /** The control URL, absolute. */
  control: string;
  /** What sluice maps it to; undefined = codec not supported. */
  codec: SdpCodec | undefined;
}

export interface Sdp {
  /** Session-level control (the aggregate URL for PLAY), absolute. */
  control: string;
  media: SdpMedia[];
  /** Media sections past MAX_SDP_MEDIA. */
  dropped: number;
}

export class SdpError extends Error {}

/** Resolve an a=control value against `base` the way RTSP servers expect. */
export function resolveControl(base: string, control: string | undefined): string {
  if (control === undefined || control === '' || control === '*') return base;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(control)) return control;
  if (control.startsWith('/')) {
    const m = /^([a-z][a-z0-9+.-]*:\/\/[^/]*)/i.exec(base);
    return (m ? m[1]! : '') + control;
  }
  // A relative control is appended to the base as a path segment (what servers and clients
  // do in practice, and RFC 2326 C.1.1 with a base ending in '/').
  const q = base.indexOf('?');
  const path = q < 0 ? base : base.slice(0, q);
  const query = q < 0 ? '' : base.slice(q);
  return `${path.endsWith('/') ? path : `${path}/`}${control}${query}`;
}

export function parseSdp(text: string, base: string): Sdp {
  const lines = text.split(/\r?\n/);
  if (!lines.some((l) => l.startsWith('v='))) throw new SdpError('SDP without v= line');
  let sessionControl: string | undefined;
  interface Raw {
    type: string;
    port: number;
    proto: string;
    pts: number[];
    rtpmap: Map<number, string>;
    fmtp: Map<number, string>;
    control?: string;
  }
  const raws: Raw[] = [];
  let dropped = 0;
  let cur: Raw | null = null;
  let skip = false;
  for (const line of lines) {
    if (line.length < 2 || line[1] !== '=') continue;
    const k = line[0];
    const v = line.slice(2).trim();
    if (k === 'm') {
      const parts = v.split(/\s+/);
      if (raws.length >= MAX_SDP_MEDIA) {
        dropped++;
        skip = true;
        cur = null;
        continue;
      }
      skip = false;
      cur = {
        type: parts[0] ?? '',
        port: Number(parts[1]?.split('/')[0] ?? 0) || 0,
        proto: parts[2] ?? '',
        pts: parts
          .slice(3)
          .filter((p) => /^\d{1,3}$/.test(p))
          .map(Number),
        rtpmap: new Map(),
        fmtp: new Map(),
      };
      raws.push(cur);
      continue;
    }
    if (k !== 'a' || skip) continue;
    const c = v.indexOf(':');
    const name = c < 0 ? v : v.slice(0, c);
    const value = c < 0 ? '' : v.slice(c + 1);
    if (name === 'control') {
      if (cur) cur.control = value.trim();
      else sessionControl = value.trim();
    } else if (cur && (name === 'rtpmap' || name === 'fmtp')) {
      const m = /^(\d{1,3})\s+(.*)$/.exec(value);
      if (m) cur[name].set(Number(m[1]), m[2]!.trim());
    }
  }
  const aggregate = resolveControl(base, sessionControl);
  const media: SdpMedia[] = raws.map((r) => {
    const pt = r.pts[0] ?? -1;
    const map = r.rtpmap.get(pt);
    let encoding = '';
    let clockRate = 0;
    let channels = 1;
    if (map) {
      const [enc, rate, ch] = map.split('/');
      encoding = (enc ?? '').toUpperCase();
      clockRate = Number(rate) || 0;
      channels = Number(ch) || 1;
    } else if (pt === 33) {
      encoding = 'MP2T';
      clockRate = 90_000;
    }
    const fmtp = parseFmtp(r.fmtp.get(pt) ?? '');
    return {
      type: r.type,
      port: r.port,
      proto: r.proto,
      payloadType: pt,
      encoding,
      clockRate,
      channels,
      fmtp,
      control: resolveControl(base, r.control),
      codec: codecOf(encoding, fmtp),
    };
  });
  return { control: aggregate, media, dropped };
}

/** `packetization-mode=1; sprop-parameter-sets=Z0IA,aM4=` → lower-case names. */
export function parseFmtp(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of s.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim().toLowerCase();
    if (k) out[k] = part.slice(i + 1).trim();
  }
  return out;
}

function codecOf(encoding: string, fmtp: Record<string, string>): SdpCodec | undefined {
  switch (encoding) {
    case 'H264':
      return 'h264';
    case 'H265':
      return 'hevc';
    case 'MP2T':
      return 'mp2t';
    case 'MPEG4-GENERIC': {
      const mode = (fmtp['mode'] ?? '').toLowerCase();
      // AAC-hbr (and AAC-lbr) carry AU headers described by sizeLength/indexLength.
      return mode.startsWith('aac') && fmtp['config'] ? 'aac' : undefined;
    }
    default:
      return undefined;
  }
}

/** Parameter sets of an H.264 or HEVC media section (NAL units without start codes). */
export function paramSetsOf(m: SdpMedia): Buffer[] {
  const keys =
    m.codec === 'h264'
      ? ['sprop-parameter-sets']
      : m.codec === 'hevc'
        ? ['sprop-vps', 'sprop-sps', 'sprop-pps']
        : [];
  const out: Buffer[] = [];
  for (const k of keys) {
    for (const b64 of (m.fmtp[k] ?? '').split(',')) {
      const t = b64.trim();
      if (!t) continue;
      const b = Buffer.from(t, 'base64');
      if (b.length > 0) out.push(b);
    }
  }
  return out;
}

/** An mpeg4-generic `config=` (hex AudioSpecificConfig). */
export function aacConfigOf(m: SdpMedia): Buffer | undefined {
  const c = m.fmtp['config'];
  if (!c || !/^([0-9a-fA-F]{2})+$/.test(c)) return undefined;
  return Buffer.from(c, 'hex');
}
