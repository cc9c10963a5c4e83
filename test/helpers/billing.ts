// A billing server for tests: node:http on a free loopback port that records every request
// (method, path, query, headers, body) and answers with what the test's `answer` returns.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BillingServer } from '../../src/billing/server.ts';

export interface BillingRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface BillingAnswer {
  status?: number;
  body?: string;
  type?: string;
  headers?: Record<string, string>;
  /** Never answer (a hung server). */
  hang?: boolean;
}

export interface TestBilling {
  url: string;
  port: number;
  requests: BillingRequest[];
  /** Requests of one `event` query value (auth, start, interim, stop). */
  events(event: string): BillingRequest[];
  /** Resolves when `n` requests matching `pick` have arrived. */
  waitFor(pick: (r: BillingRequest) => boolean, n?: number): Promise<BillingRequest[]>;
  answer: (r: BillingRequest) => BillingAnswer;
  close(): Promise<void>;
}

export async function startBilling(
  answer: (r: BillingRequest) => BillingAnswer = () => ({ status: 200, body: 'ok' }),
): Promise<TestBilling> {
  const requests: BillingRequest[] = [];
  const waiters: Array<() => void> = [];
  const hung = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://billing');
      const r: BillingRequest = {
        method: req.method ?? '',
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      requests.push(r);
      for (const w of waiters.splice(0)) w();
      const a = tb.answer(r);
      if (a.hang) {
        hung.add(res);
        return;
      }
      res.writeHead(a.status ?? 200, { 'content-type': a.type ?? 'text/plain', ...a.headers });
      res.end(a.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const tb: TestBilling = {
    url: `http://127.0.0.1:${port}/auth`,
    port,
    requests,
    answer,
    events: (event) => requests.filter((r) => r.query.get('event') === event),
    waitFor: async (pick, n = 1) => {
      for (;;) {
        const got = requests.filter(pick);
        if (got.length >= n) return got;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    close: async () => {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return tb;
}

/** A billing server record as the gate takes it (status replies, accounting on), for `url`. */
export function billingServer(url: string, more: Partial<BillingServer> = {}): BillingServer {
  return {
    id: 1,
    name: 'main',
    secret: 's3cret',
    url,
    timeoutMs: 2000,
    accounting: true,
    loginPrefix: '',
    loginSuffix: '',
    trace: false,
    order: 0,
    enabled: true,
    requestQuery: '',
    requestBody: '',
    requestContentType: '',
    requestHeaders: [],
    reply: { format: 'status', okPath: '', okValue: '', reasonPath: '' },
    ...more,
  };
}
