// The webhook's real POST: JSON over HTTP(S) with Node's fetch, bounded by a timeout; any
// answer but 2xx is a failure. The body of the answer is not read.
import type { Poster } from './webhook.ts';

export const httpPost: Poster = async (url, body, timeoutMs, signal) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': 'sluice-alerter' },
    body,
    signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
  });
  await res.body?.cancel();
  if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status}`);
};
