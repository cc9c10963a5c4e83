import http from 'node:http';
import t from 'tap';
import { parseNit } from '../../src/mpegts/nit.ts';
import { NULL_PID, pid as pidOf, TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { parseDescriptors, parsePat, parsePmt } from '../../src/mpegts/psi.ts';
import { parseSdt } from '../../src/mpegts/sdt.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import { probePrograms } from '../helpers/mpts.ts';
import { httpFor, makeHost, streamSet, tempDir, waitFor } from '../helpers/stream-host.ts';
import { pcrAccuracy, sectionsOf } from '../helpers/ts-measure.ts';

const RATE_KBPS = 2100;
const CBR_WINDOW_MS = 10_000;
const dir = tempDir(t, 'sluice-muxer-');
const host = makeHost(dir);
const base = await httpFor(t, host.router);
const { open: stream, close: stop } = streamSet(t, host);

/** ffprobe's programmes of a URL, as `{ programs }`. */
const probe = async (url: string) => ({ programs: await probePrograms(url) });

/** START_BURST_MS after the first byte: what HTTP-TS sends a new client at once (the PSI and
 *  the output since the last key frame) has arrived by then. */
const START_BURST_MS = 200;

/** `ms` of a stream's HTTP-TS output: all of it, the live part (after the start burst), and
 *  the rate of the live part by the clock. */
async function capture(
  name: string,
  ms: number,
): Promise<{ ts: Buffer; live: Buffer; rate: number }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let first = 0;
    /** Bytes before the chunk that opened the live part (-1 until then). */
    let liveFrom = -1;
    let liveAt = 0;
    let lastAt = 0;
    /** Bytes of the live part after its opening chunk, for the rate. */
    let liveBytes = 0;
    let total = 0;
    const req = http.get(`${base}/${name}/mpegts`, (res) => {
      res.on('data', (d: Buffer) => {
        const now = performance.now();
        if (!first) first = now;
        if (liveFrom >= 0) liveBytes += d.length;
        else if (now - first >= START_BURST_MS) {
          liveFrom = total;
          liveAt = now;
        }
        lastAt = now;
        total += d.length;
        parts.push(d);
      });
    });
    req.on('error', reject);
    // fixed wait: the constant rate is measured over this real duration
    setTimeout(() => {
      req.destroy();
      const all = Buffer.concat(parts);
      const ts = all.subarray(0, all.length - (all.length % TS_PACKET_SIZE));
      const from = Math.ceil(liveFrom / TS_PACKET_SIZE) * TS_PACKET_SIZE; // chunks cut anywhere
      resolve({ ts, live: ts.subarray(from), rate: (liveBytes * 8) / ((lastAt - liveAt) / 1000) });
    }, ms);
  });
}

function pidCounts(ts: Buffer): Map<number, number> {
  const m = new Map<number, number>();
  for (let o = 0; o + TS_PACKET_SIZE <= ts.length; o += TS_PACKET_SIZE) {
    m.set(pidOf(ts, o), (m.get(pidOf(ts, o)) ?? 0) + 1);
  }
  return m;
}

const SOURCES = [11, 12, 13];
const NAMES = ['Sluice One', 'Sluice Two', 'Sluice Three'];

t.test('three test streams into one multiplex', async (t) => {
  const sources = await Promise.all(
    SOURCES.map((id) =>
      stream({
        id,
        'stream-name': `src${id}`,
        input: [{ type: 'test', width: 160, height: 90, 'video-bitrate': 150 }],
      }),
    ),
  );
  const mux = await stream({
    id: 20,
    'stream-name': 'mux',
    mpts: true,
    input: [
      {
        type: 'muxer',
        'mpegts-streamid': 5,
        'mpegts-nid': 0x3001,
        'mpegts-net-name': 'Sluice Network',
        'sdt-provider-name': 'Sluice Provider',
        'mpegts-country-code': 'GBR',
        'mpegts-output-bitrate': RATE_KBPS,
        programmes: SOURCES.map((id, i) => ({
          'stream-id': id,
          pnr: 101 + i,
          'service-name': NAMES[i],
        })),
      },
    ],
  });
  await waitFor(
    () => sources.every((s) => s.state() === 'running') && mux.state() === 'running',
    20_000,
    'sources and multiplex running',
  );
  const tr = () =>
    (mux.status()['inputs'] as { transport: Record<string, unknown> }[])[0]!.transport as {
      programmes: { pmtPid: number; packetsOut: number; running: boolean; queued: number }[];
      collisions: string[];
    };
  await waitFor(
    () => tr().programmes.every((p) => p.packetsOut > 0),
    10_000,
    'every programme carried',
  );

  const { ts, rate } = await capture('mux', CBR_WINDOW_MS);
  t.ok(
    Math.abs(rate / (RATE_KBPS * 1000) - 1) < 0.01,
    `constant rate over 10 s: ${(rate / 1000).toFixed(1)} kbit/s for ${RATE_KBPS}`,
  );
  const acc = pcrAccuracy(ts, RATE_KBPS * 1000);
  t.ok(acc.count > 3 * 200, `${acc.count} PCRs measured`);
  t.ok(acc.maxAbsNs <= 500, `PCR accuracy: max |error| ${acc.maxAbsNs.toFixed(1)} ns (±500 ns)`);
  t.same([...acc.byPid.keys()].sort(), [0x101, 0x141, 0x181], 'a PCR PID per programme');

  const pat = parsePat(sectionsOf(ts, 0).at(-1)!);
  t.equal(pat.transportStreamId, 5);
  t.same(
    pat.programs,
    [
      { programNumber: 101, pid: 0x100 },
      { programNumber: 102, pid: 0x140 },
      { programNumber: 103, pid: 0x180 },
    ],
    'auto-pid: a PMT per block',
  );
  for (const [i, pmtPid] of [0x100, 0x140, 0x180].entries()) {
    const pmt = parsePmt(sectionsOf(ts, pmtPid).at(-1)!);
    t.same(
      pmt.streams.map((s) => s.pid),
      [pmtPid + 1, pmtPid + 2],
      `programme ${101 + i}: the sources' PIDs 33 and 34 remapped`,
    );
  }
  const counts = pidCounts(ts);
  t.notOk(counts.has(33) || counts.has(34), 'no source PID left');
  t.ok((counts.get(NULL_PID) ?? 0) > 0, 'null stuffing');
  const nit = parseNit(sectionsOf(ts, 0x10).at(-1)!);
  t.equal(nit.networkId, 0x3001);
  t.equal(parseDescriptors(nit.descriptors)[0]!.data.toString(), 'Sluice Network', 'NIT name');
  const a = new TsAnalyzer({ tr101290: true });
  a.push(ts);
  const e = a.stats().tr101290;
  t.equal(e.continuityCountError, 0, 'no CC error');
  t.equal(e.pcrRepetitionError, 0, 'the native analyzer: no PCR more than 40 ms apart');
  t.equal(e.pcrAccuracyError, 0, 'the native analyzer: PCR accuracy within ±500 ns');
  t.equal(e.patError + e.pmtError + e.crcError, 0, 'PAT and PMTs in time, CRCs good');

  const p = await probe(`${base}/mux/mpegts`);
  t.same(
    p.programs.map((x) => [x.program_num, x.tags?.service_name, x.tags?.service_provider]).sort(),
    NAMES.map((n, i) => [101 + i, n, 'Sluice Provider']),
    'ffprobe: three programmes, their names and the provider',
  );
  t.ok(
    p.programs.every(
      (x) =>
        x.streams
          .map((s) => s.codec_name)
          .sort()
          .join() === 'h264,mp2',
    ),
    'each with its video and audio',
  );

  // Programme 102's stream stops: it stays in the tables, without packets.
  await stop('12', sources[1]!);
  await waitFor(
    () => !tr().programmes[1]!.running && tr().programmes[1]!.queued === 0,
    5000,
    'the source seen stopped, its queue drained',
  );
  const after = (await capture('mux', 1500)).live;
  const c2 = pidCounts(after);
  t.notOk(c2.has(0x141) || c2.has(0x142), 'no packets of programme 102');
  t.ok((c2.get(0x101) ?? 0) > 0 && (c2.get(0x181) ?? 0) > 0, 'the others go on');
  t.same(
    parsePat(sectionsOf(after, 0).at(-1)!).programs.map((x) => x.programNumber),
    [101, 102, 103],
    'programme 102 still in the PAT',
  );
  t.equal(parsePmt(sectionsOf(after, 0x140).at(-1)!).streams.length, 2, 'and its PMT');
  t.same(
    parseSdt(sectionsOf(after, 0x11).at(-1)!).services.map((s) => s.runningStatus),
    [4, 1, 4],
    'SDT: programme 102 not running',
  );
  t.ok(pcrAccuracy(after, RATE_KBPS * 1000).maxAbsNs <= 500, 'PCR accuracy unchanged');
});

t.test('auto-pid false: the sources collide, the status names both and the PID', async (t) => {
  await Promise.all(
    [31, 32].map((id) =>
      stream({
        id,
        'stream-name': `src${id}`,
        input: [{ type: 'test', width: 160, height: 90, 'video-bitrate': 150 }],
      }),
    ),
  );
  const mux = await stream({
    id: 40,
    'stream-name': 'mux-own',
    mpts: true,
    input: [
      {
        type: 'muxer',
        'auto-pid': false,
        'mpegts-output-bitrate': 1000,
        programmes: [
          { 'stream-id': 31, pnr: 1 },
          { 'stream-id': 32, pnr: 2 },
        ],
      },
    ],
  });
  const tr = () =>
    (mux.status()['inputs'] as { transport: Record<string, unknown> }[])[0]!.transport as {
      collisions: string[];
      programmes: { pmtPid: number }[];
    };
  await waitFor(() => tr().collisions.length > 0, 20_000, 'a collision reported');
  t.match(
    tr().collisions[0],
    /^PID 32 of stream 3[12] \(pnr [12]\) collides with stream 3[12] \(pnr [12]\): programme [12] left out$/,
  );
  t.same(
    tr()
      .programmes.map((p) => p.pmtPid)
      .sort(),
    [-1, 32],
    'the first keeps its own PIDs, the other is left out',
  );
});
