// The `url` of an `rtmp` input: `rtmp[s]://host[:port]/app/stream` pulls from an origin;
// `rtmp://@host[:port]/app/key` (an `@` before the host, as RIST writes a listener) listens on
// host:port for an encoder publishing `key` to `app` (docs/inputs-pull.md).

export interface RtmpUrl {
  tls: boolean;
  listen: boolean;
  host: string;
  port: number;
  /** The application: the path's first segment. */
  app: string;
  /** The stream name (pull: with its query, sent as it is) or stream key (listen). */
  stream: string;
  /** tcUrl of the connect command: scheme://host:port/app. */
  tcUrl: string;
}

export const RTMP_PORT = 1935;
export const RTMPS_PORT = 443;

export function parseRtmpUrl(raw: string): RtmpUrl {
  const m = /^(rtmps?):\/\/(@?)(\[[^\]]*\]|[^/:?#@]*)(?::(\d+))?\/([^/?#]+)\/([^#]+)$/i.exec(
    raw.trim(),
  );
  if (!m) {
    throw new Error(
      `url ${raw}: not rtmp[s]://host[:port]/app/stream (or rtmp://@host:port/app/key to listen)`,
    );
  }
  const tls = m[1]!.toLowerCase() === 'rtmps';
  const listen = m[2] === '@';
  const host = m[3]!.replace(/^\[|\]$/g, '') || (listen ? '0.0.0.0' : '');
  if (!host) throw new Error(`url ${raw}: no host`);
  const port = m[4] ? Number(m[4]) : tls ? RTMPS_PORT : RTMP_PORT;
  if (!(port >= 1 && port <= 65535)) throw new Error(`url ${raw}: port ${m[4]} out of range`);
  if (listen && tls) throw new Error(`url ${raw}: listening over TLS (rtmps://@) is not supported`);
  const app = decodeURIComponent(m[5]!);
  let stream = m[6]!;
  if (listen) stream = decodeURIComponent(stream.replace(/\?.*$/, ''));
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return {
    tls,
    listen,
    host,
    port,
    app,
    stream,
    tcUrl: `${m[1]!.toLowerCase()}://${hostPart}:${port}/${m[5]}`,
  };
}
