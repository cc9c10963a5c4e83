// The webhook's real POST: JSON over HTTP(S) through the outbound request, whose deadline
// (`webhook-timeout-sec`) covers connecting, sending and the answer's headers and cannot be
// lost; any answer but 2xx is a failure. The body of the answer is not read: the connection goes.
import { openWithDeadline } from '../util/outbound-request.ts';
import type { Poster } from './webhook.ts';

export const httpPost: Poster = async (url, body, timeoutMs, signal) => {
  const answer = await openWithDeadline(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': 'sluice-alerter' },
    body,
    deadlineMs: timeoutMs,
    signal,
  });
  answer.close();
  if (answer.status < 200 || answer.status > 299) throw new Error(`HTTP ${answer.status}`);
};
