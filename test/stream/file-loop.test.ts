// A looping file input: at each loop the file's continuity counters and timestamps jump back to
// its start. The stream splices there like at an input switch, so an HTTP-TS client reading
// across loops sees no CC error, and the loop is marked with discontinuity_indicator.
import http from 'node:http';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import {
  httpFor,
  makeFixture,
  makeHost,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir, 2);
const host = makeHost(dir);
const base = await httpFor(t, host.router);

/** Packets (PID ≠ null) flagged with discontinuity_indicator. */
function discontinuities(ts: Buffer): number {
  let n = 0;
  for (let o = 0; o + 188 <= ts.length; o += 188) {
    if ((ts[o + 3]! & 0x20) !== 0 && ts[o + 4]! > 0 && (ts[o + 5]! & 0x80) !== 0) n++;
  }
  return n;
}

t.test('two loops of a 2 s file: continuous output', async (t) => {
  const s = (await new StreamDriver().create(
    streamResource({ 'stream-name': 'loop', input: [{ type: 'file', 'file-path': fixture }] }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());
  await waitFor(() => s.state() === 'running', 8000, 'running');
  const raw: Buffer[] = [];
  const req = http.get(`${base}/loop/mpegts`, (res) => res.on('data', (d: Buffer) => raw.push(d)));
  req.on('error', () => undefined);
  t.teardown(() => req.destroy());
  const loops = () =>
    Number((s.status()['inputs'] as { transport: { loops: number } }[])[0]!.transport.loops);
  const l0 = loops();
  await waitFor(() => loops() >= l0 + 2, 8000, 'two loops');
  await new Promise((r) => setTimeout(r, 500));
  req.destroy();
  const out = Buffer.concat(raw);
  const a = new TsAnalyzer({ tr101290: true });
  a.push(out);
  const st = a.stats();
  t.ok(st.packets > 500, `${st.packets} packets read`);
  t.equal(st.tr101290.continuityCountError, 0, 'no CC error across the loops');
  t.ok(discontinuities(out) >= 2, 'the loops are marked with discontinuity_indicator');
  t.ok((s.status()['splicer'] as { splices: number }).splices >= 2, 'spliced at each loop');
});
