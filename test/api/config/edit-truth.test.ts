// What an edit answers and what status says afterwards are true (issue 36): a member the
// schema ignores restarts nothing and is warned about in the answer and in /data/status; a
// listener moved to a port another socket holds keeps serving where it was, and says so.
import net from 'node:net';
import t from 'tap';
import { LADDER_TEST_SOURCE } from '../../helpers/ladder.ts';
import { type ServerHandle, startServer, type Teardown, waitFor } from '../../helpers/server.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON answers, read member by member
type Json = Record<string, any>;

/** The test generator: an ffmpeg child whose PID tells whether the input restarted. */
const SOURCE = LADDER_TEST_SOURCE;

const get = async (srv: ServerHandle, path: string): Promise<Json> =>
  (await fetch(`${srv.url}${path}`)).json() as Promise<Json>;

async function patch(srv: ServerHandle, path: string, body: unknown): Promise<Json> {
  const res = await fetch(`${srv.url}${path}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json', 'x-sluice-request': '1' },
    body: JSON.stringify(body),
  });
  const out = (await res.json()) as Json;
  if (res.status !== 200) throw new Error(`PATCH ${path}: ${res.status} ${JSON.stringify(out)}`);
  return out;
}

/** Wait until the reconcile pass of the edit answered with `etag` has finished. */
const applied = (srv: ServerHandle, etag: string) =>
  waitFor(`revision ${etag} applied`, async () => {
    const st = await get(srv, '/data/status');
    return `"${st['revision']}"` === etag ? st : undefined;
  });

const generatorPid = async (srv: ServerHandle): Promise<number> =>
  waitFor('the test generator running', async () => {
    const s = await get(srv, '/data/stream/1');
    const pid = s['inputs']?.[0]?.transport?.pid;
    return typeof pid === 'number' ? pid : undefined;
  });

/** A socket of this test on a free loopback port, closed on teardown (or earlier). */
async function holdPort(t: Teardown): Promise<{ port: number; release: () => Promise<void> }> {
  const holder = net.createServer((s) => s.destroy());
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const port = (holder.address() as net.AddressInfo).port;
  let open = true;
  const release = async () => {
    if (!open) return;
    open = false;
    await new Promise((r) => holder.close(r));
  };
  t.teardown(release);
  return { port, release };
}

const resource = (st: Json, kind: string): Json =>
  (st['resources'] as Json[]).find((r) => r['kind'] === kind)!;

t.test('an edit of an ignored member restarts nothing and says so', async (t) => {
  const srv = await startServer(t, {
    config: { stream: [{ id: 1, 'stream-name': 'one', pause: false, input: [SOURCE] }] },
  });
  const pid = await generatorPid(srv);

  const out = await patch(srv, '/config/stream/1', { notee: 'x' });
  t.match(out['plan'].summary, { add: 0, change: 0, replace: 0, destroy: 0 }, 'nothing planned');
  const said = 'unknown member "notee" is ignored (did you mean note?)';
  t.ok(
    out['plan'].warnings.some((w: Json) => w.message === said && w.pointer === '/stream/0/notee'),
    `the answer warns: ${JSON.stringify(out['plan'].warnings)}`,
  );
  const st = await applied(srv, out['etag']);
  t.ok(
    st['source'].warnings.some((w: Json) => w.message === said),
    `/data/status warns: ${JSON.stringify(st['source'].warnings)}`,
  );
  t.equal(await generatorPid(srv), pid, 'the test generator is the same process');

  // One level down: a misspelt member of the input record.
  const nested = await patch(srv, '/config/stream/1', { input: [{ ...SOURCE, widthh: 320 }] });
  t.equal(nested['plan'].summary.change, 0, 'nothing planned for the input either');
  t.match(nested['plan'].warnings, [{ message: /"widthh" is ignored \(did you mean width\?\)/ }]);
  await applied(srv, nested['etag']);
  t.equal(await generatorPid(srv), pid, 'still the same process');
});

t.test('a listener moved to a taken port keeps serving and says so', async (t) => {
  const srv = await startServer(t, { config: {} });
  const epgPort = (await get(srv, '/config/epg-server'))['port'] as number;
  const taken = await holdPort(t);

  const out = await patch(srv, '/config/epg-server', { port: taken.port });
  await applied(srv, out['etag']);
  const epg = resource(await get(srv, '/data/status'), 'epg-server');
  t.equal(epg['state'], 'error', 'status says the EPG server is in error');
  t.match(epg['status'].message, `127.0.0.1:${taken.port}: the port is in use`);
  t.match(epg['status'].message, `still serving on HTTP port ${epgPort}`);
  t.equal(epg['status'].http, epgPort, 'the port shown is the one it serves on');
  const xmltv = await fetch(`http://127.0.0.1:${epgPort}/xmltv`);
  t.ok(xmltv.status > 0, `the old EPG port still answers (${xmltv.status})`);

  // The admin API: its own listener, moved to a taken port, keeps answering where it was.
  const apiTaken = await holdPort(t);
  const moved = await patch(srv, '/config/http-server', { port: apiTaken.port });
  await applied(srv, moved['etag']);
  const api = resource(await get(srv, '/data/status'), 'http-server');
  t.equal(api['state'], 'error', 'status says the admin listener is in error');
  t.match(api['status'].message, `still serving on 127.0.0.1:${srv.port}`);

  // Once the port is free, the retry moves the EPG listener there and the error goes.
  await taken.release();
  const after = await waitFor(
    'the EPG listener moved',
    async () => {
      const e = resource(await get(srv, '/data/status'), 'epg-server');
      return e['state'] === 'listening' ? e : undefined;
    },
    15_000,
  );
  t.equal(after['status'].http, taken.port, 'it serves on the new port');
  await t.rejects(fetch(`http://127.0.0.1:${epgPort}/xmltv`), 'and the old one is closed');
});
