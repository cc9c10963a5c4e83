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

const VIDEO = 0x100;

/** Packets (PID ≠ null; of PID `only` if given) flagged with discontinuity_indicator. A splice
 *  flags the first packet of each PID after it: on one PID the count is the splices. */
function discontinuities(ts: Buffer, only?: number): number {
  let n = 0;
  for (let o = 0; o + 188 <= ts.length; o += 188) {
    if (only !== undefined && (((ts[o + 1]! & 0x1f) << 8) | ts[o + 2]!) !== only) continue;
    if ((ts[o + 3]! & 0x20) !== 0 && ts[o + 4]! > 0 && (ts[o + 5]! & 0x80) !== 0) n++;
  }
  return n;
}

/** Packets read past the second splice: about half a second of the fixture. */
const AFTER_SPLICE_PACKETS = 200;

t.test('two loops of a 2 s file: continuous output', async (t) => {
  const s = (await new StreamDriver().create(
    streamResource({ 'stream-name': 'loop', input: [{ type: 'file', 'file-path': fixture }] }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());
  await waitFor(() => s.state() === 'running', 8000, 'running');
  const raw: Buffer[] = [];
  let received = 0;
  const req = http.get(`${base}/loop/mpegts`, (res) =>
    res.on('data', (d: Buffer) => {
      raw.push(d);
      received += d.length;
    }),
  );
  req.on('error', () => undefined);
  t.teardown(() => req.destroy());
  const loops = () =>
    Number((s.status()['inputs'] as { transport: { loops: number } }[])[0]!.transport.loops);
  const l0 = loops();
  await waitFor(() => loops() >= l0 + 2, 8000, 'two loops');
  // The client has both splices, and the stream goes on past the second (CC checked across it).
  await waitFor(() => discontinuities(Buffer.concat(raw), VIDEO) >= 2, 5000, 'both splices read');
  const at = received;
  await waitFor(() => received >= at + AFTER_SPLICE_PACKETS * 188, 5000, 'output after them');
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
