// The dashboard's calls to the admin API: same origin, the browser's Digest session; every
// failure becomes an ApiError carrying the server's `{status, message}`.

/** What an edit refused with 412 (If-Match no longer the config's ETag) tells the user. */
export const CHANGED_MEANWHILE =
  'The config changed meanwhile (another edit was saved after you loaded it), so nothing was applied. Reload to get the current config, then make your change again.';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

/** What the admin API asks of a change that has no JSON body (src/api/csrf.ts, docs/api.md):
 *  sent on every change, so a POST without a body is never refused. */
const CHANGE_HEADER = 'X-Sluice-Request';

/** Paths are absolute (`/data/...`, `/config`): the API is at the server's root, whatever the
 *  UI path is. Bodies are JSON (`json`): the API refuses text and form bodies on a change. */
export async function api<T>(
  path: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<{ body: T; etag: string | null }> {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined && !headers.has('content-type')) {
    headers.set('content-type', 'application/json');
  }
  const method = (rest.method ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'HEAD') headers.set(CHANGE_HEADER, '1');
  const res = await fetch(path, {
    ...rest,
    headers,
    ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  if (!res.ok) {
    const msg =
      body && typeof body === 'object' && 'message' in body
        ? String((body as { message: unknown }).message)
        : `${res.status} ${res.statusText}`;
    throw new ApiError(res.status, msg, body);
  }
  return { body: body as T, etag: res.headers.get('etag') };
}

/** A text answer as it is (never parsed), with its ETag. */
export async function apiText(path: string): Promise<{ body: string; etag: string | null }> {
  const res = await fetch(path);
  const body = await res.text();
  if (!res.ok) throw new ApiError(res.status, body || `${res.status} ${res.statusText}`);
  return { body, etag: res.headers.get('etag') };
}
