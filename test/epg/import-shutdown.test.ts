// A failed HTTP import leaves nothing behind that keeps the server alive: the real server
// (`bin/sluice.js serve`) with one source answering garbage and one cutting the connection
// mid-body reports both failures in /data/status, then exits cleanly on SIGTERM within a few
// seconds (the download's timers and request used to outlive the failure by minutes).
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startServer, waitFor } from '../helpers/server.ts';

/** The server must be gone this long after SIGTERM. */
const EXIT_WITHIN_MS = 5000;
const IMPORT_TIMEOUT_MS = 20_000;

interface StatusEntry {
  kind: string;
  key: string;
  status?: { state?: string; lastError?: string };
}

t.test('SIGTERM stops the server after failed HTTP imports', async (t) => {
  const guide = createServer((req, res) => {
    if (req.url === '/garbage') {
      // Not XMLTV, and longer than one read: the parser fails while the body is still coming.
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<html>${'<p>login page</p>'.repeat(64 * 1024)}</html>`);
    } else if (req.url === '/cut') {
      res.writeHead(200, { 'content-type': 'application/xml', 'content-length': '100000' });
      res.write('<tv><channel id="x">', () => res.destroy());
    } else res.writeHead(404).end();
  });
  guide.listen(0, '127.0.0.1');
  await once(guide, 'listening');
  t.teardown(() => {
    guide.closeAllConnections();
    guide.close();
  });
  const base = `http://127.0.0.1:${(guide.address() as AddressInfo).port}`;
  const srv = await startServer(t, {
    config: {
      epg: {
        source: [
          { id: 1, name: 'garbage', source: `${base}/garbage`, enable: true },
          { id: 2, name: 'cut', source: `${base}/cut`, enable: true },
        ],
      },
    },
  });
  const errors = await waitFor(
    'both imports failing in /data/status',
    async () => {
      const st = (await (await fetch(`${srv.url}/data/status`)).json()) as {
        resources: StatusEntry[];
      };
      const errs = st.resources
        .filter((r) => r.kind === 'epg-source' && r.status?.lastError)
        .map((r) => [r.key, r.status!.lastError!] as const);
      return errs.length === 2 ? new Map(errs) : undefined;
    },
    IMPORT_TIMEOUT_MS,
  );
  t.match(errors.get('1'), /^XMLTV parse error: root element is <html>, not <tv>/);
  t.match(errors.get('2'), /^download failed: /);
  for (const e of errors.values()) t.notMatch(e, /operation was aborted/i, e);

  const sent = Date.now();
  srv.proc.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([
    srv.exited,
    new Promise<'alive'>((ok) => {
      timer = setTimeout(() => ok('alive'), EXIT_WITHIN_MS);
    }),
  ]);
  clearTimeout(timer);
  t.not(exit, 'alive', `still running ${EXIT_WITHIN_MS} ms after SIGTERM:\n${srv.output()}`);
  t.same(exit, { code: 0, signal: null }, `clean exit after ${Date.now() - sent} ms`);
});
