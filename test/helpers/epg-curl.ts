// curl as the HTTP client of the EPG tests: runs it with argv (never a shell), keeps the last
// response of a Digest exchange, and returns status, lower-cased headers and the raw body.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CURL_TIMEOUT_SEC = '10';
const MAX_BODY = 64 * 1024 * 1024;

export interface CurlResult {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export async function curl(args: string[]): Promise<CurlResult> {
  const { stdout } = await run('curl', ['-sS', '-i', '--max-time', CURL_TIMEOUT_SEC, ...args], {
    encoding: 'buffer',
    maxBuffer: MAX_BODY,
  });
  // With --digest curl prints the 401 exchange first; keep the last response.
  let buf = stdout;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n');
    const head = buf.subarray(0, end).toString('latin1');
    const rest = buf.subarray(end + 4);
    if (/^HTTP\/[\d.]+ 401/.test(head) && rest.subarray(0, 5).toString() === 'HTTP/') {
      buf = rest;
      continue;
    }
    const [statusLine, ...lines] = head.split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      const k = l.slice(0, i).trim().toLowerCase();
      headers[k] = headers[k] ? `${headers[k]}, ${l.slice(i + 1).trim()}` : l.slice(i + 1).trim();
    }
    return { status: Number(statusLine!.split(' ')[1]), headers, body: rest };
  }
}
