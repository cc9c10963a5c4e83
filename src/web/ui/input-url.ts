// An input record from a URL, for the "add a stream" form: the scheme picks the input type
// (udp, rtp, tcp, srt, hls over http(s), rtmp, rtsp) and the URL's parts fill its members.

export type InputRecord = Record<string, unknown> & { type: string };

const HOST_PORT = new Set(['udp:', 'rtp:', 'tcp:', 'srt:']);

/** The input record for `url`, or an Error saying why it is not one. */
export function inputFromUrl(url: string): InputRecord | Error {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    return new Error('not a URL (e.g. udp://239.1.1.1:1234, http://host/live.m3u8)');
  }
  const host = u.hostname.replace(/^\[|\]$/g, '').replace(/^@$/, '');
  if (HOST_PORT.has(u.protocol)) {
    const port = Number(u.port);
    if (!port) return new Error(`${u.protocol}// needs a port`);
    return { type: u.protocol.slice(0, -1), ...(host ? { address: host } : {}), port };
  }
  if (u.protocol === 'http:' || u.protocol === 'https:') return { type: 'hls', uri: u.href };
  if (u.protocol === 'rtmp:' || u.protocol === 'rtmps:') return { type: 'rtmp', url: u.href };
  if (u.protocol === 'rtsp:') return { type: 'rtsp', uri: u.href };
  return new Error(`no input type for ${u.protocol}// (udp rtp tcp srt http https rtmp rtsp)`);
}
