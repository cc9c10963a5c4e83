// acme-client's HTTP, carried by the outbound request: an axios adapter, so that every request
// of an order (directory, nonce, account, order, challenge, certificate) has a deadline we set,
// over the whole exchange, that destroys the connection when it expires.
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import { requestWithDeadline } from '../util/outbound-request.ts';

/** An ACME answer is JSON or a PEM chain: far below this; more is no answer. */
const ANSWER_LIMIT_BYTES = 1024 * 1024;

function headersOf(config: InternalAxiosRequestConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.headers.toJSON())) {
    if (value === undefined || value === null) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

function bodyOf(data: unknown): string | Uint8Array | undefined {
  if (data === undefined || data === null) return undefined;
  if (typeof data === 'string' || data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return JSON.stringify(data);
}

/** An adapter whose every request ends within `deadlineMs`. A failure without an answer reaches
 *  the caller as our error, in words (`no answer from https://… in 30 s`): it carries no axios
 *  `config`, so acme-client's interceptor neither retries it nor reads a response it lacks. */
export function deadlineAdapter(deadlineMs: number): AxiosAdapter {
  return async (config) => {
    const url = new URL(config.url ?? '', config.baseURL).href;
    const body = bodyOf(config.data);
    const answer = await requestWithDeadline(url, {
      method: (config.method ?? 'get').toUpperCase(),
      headers: headersOf(config),
      ...(body === undefined ? {} : { body }),
      deadlineMs,
      maxBodyBytes: ANSWER_LIMIT_BYTES,
    });
    const response: AxiosResponse = {
      data: answer.body.toString('utf8'),
      status: answer.status,
      statusText: answer.statusText,
      headers: answer.headers,
      config,
    };
    // axios's own rule: a status the config does not accept rejects, with the response.
    if (!config.validateStatus || config.validateStatus(answer.status)) return response;
    throw Object.assign(new Error(`Request failed with status code ${answer.status}`), {
      config,
      response,
      isAxiosError: true,
    });
  };
}
