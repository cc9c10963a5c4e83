// The demuxer input end to end: an MPTS of three programmes made by ffmpeg (different codecs per
// programme, SDT from ffmpeg, EIT crafted and woven in) played by a `file` input of an
// `mpts: true` stream; three demuxer streams, one per programme, read over HTTP-TS and probed
// by ffprobe. Then a crafted multiplex driven by hand: a PMT version change followed, a
// programme that leaves the PAT faults the input, and its return is spliced.
import { join } from 'node:path';
import t from 'tap';
import { BusHub } from '../../src/engine/hub.ts';
import { splitterConsumers } from '../../src/inputs/demuxer/shared.ts';
import { crc32 } from '../../src/mpegts/crc.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import { captureHttp, makeMpts, probePrograms } from '../helpers/mpts.ts';
import { httpFor, makeHost, streamSet, tempDir, waitFor } from '../helpers/stream-host.ts';
import { packet, pat, pmt, psiPackets, section } from '../helpers/ts-craft.ts';

const dir = tempDir(t, 'sluice-demux-');
const host = makeHost(dir);
const base = await httpFor(t, host.router);
const crafted = new Map<string, BusHub>();
const { open: stream } = streamSet(t, host, (key) =>
  crafted.has(key) ? { hub: crafted.get(key) } : undefined,
);

/** An EIT p/f actual section for `service` with one event named `name`. */
function eitSection(service: number, name: string): Buffer {
  const text = Buffer.from(name, 'latin1');
  const short = Buffer.concat([
    Buffer.from([0x4d, 5 + text.length, 0x65, 0x6e, 0x67, text.length]),
    text,
    Buffer.from([0]),
  ]);
  const event = Buffer.alloc(12);
  event.writeUInt16BE(service, 0); // event_id
  event.set([0xea, 0x5e, 0x12, 0x00, 0x00, 0x01, 0x00, 0x00], 2); // start 2023-…, duration 1 h
  event.writeUInt16BE(0x8000 | short.length, 10); // running, free, descriptors_loop_length
  const body = Buffer.concat([Buffer.from([0, 1, 0xff, 0x01, 0, 0x4e]), event, short]);
  const s = section(0x4e, service, body);
  s[1] = (s[1]! & 0x0f) | 0xf0;
  s.writeUInt32BE(crc32(s.subarray(0, s.length - 4)), s.length - 4);
  return s;
}

/** ffmpeg's MPTS (101: H.264 + AAC, 102: MPEG-2 + MP2, 103: H.264 + AC-3) with EIT for each
 *  service woven in after every PAT. */
function mpts(seconds: number): string {
  const file = join(dir, 'mpts.ts');
  makeMpts(
    file,
    [
      { pnr: 101, title: 'Channel One', video: 'libx264', audio: 'aac' },
      { pnr: 102, title: 'Channel Two', video: 'mpeg2video', audio: 'mp2' },
      { pnr: 103, title: 'Channel Three', video: 'libx264', audio: 'ac3' },
    ],
    seconds,
    [
      eitSection(101, 'News at one'),
      eitSection(102, 'Film at two'),
      eitSection(103, 'Sport at three'),
    ],
  );
  return file;
}

const probe = probePrograms;
const capture = (name: string, bytes: number) => captureHttp(`${base}/${name}/mpegts`, bytes);

t.test(
  'three demuxers on one ffmpeg MPTS: one programme each, its codecs, SDT and EIT',
  async (t) => {
    const file = mpts(4);
    const src = await stream({
      id: 7,
      'stream-name': 'mux',
      mpts: true,
      input: [{ type: 'file', 'file-path': file }],
    });
    const want = [
      { pnr: 101, name: 'Channel One', codecs: ['aac', 'h264'], event: 'News at one' },
      { pnr: 102, name: 'Channel Two', codecs: ['mp2', 'mpeg2video'], event: 'Film at two' },
      { pnr: 103, name: 'Channel Three', codecs: ['ac3', 'h264'], event: 'Sport at three' },
    ];
    const demux = await Promise.all(
      want.map((w) =>
        stream({
          'stream-name': `ch${w.pnr}`,
          input: [{ type: 'demuxer', 'mpts-id': 7, pnr: w.pnr }],
        }),
      ),
    );
    await waitFor(
      () => demux.every((d) => d.state() === 'running'),
      15_000,
      'demuxer streams running',
    );
    t.equal(splitterConsumers(src.hub), 3, 'one shared splitter with three consumers');
    t.equal(src.hub.size, 2, 'the multiplex bus has one splitter subscribed (plus HTTP-TS)');
    for (const w of want) {
      const programs = await probe(`${base}/ch${w.pnr}/mpegts`);
      t.equal(programs.length, 1, `ch${w.pnr}: exactly one programme`);
      const prog = programs[0]!;
      t.equal(prog.program_num, w.pnr);
      t.equal(prog.tags?.service_name, w.name, `ch${w.pnr}: its service name from the SDT`);
      t.same(prog.streams.map((s) => s.codec_name).sort(), w.codecs, `ch${w.pnr}: its codecs`);
      const ts = await capture(`ch${w.pnr}`, 400_000);
      const a = new TsAnalyzer({ tr101290: true, psiPids: 'all' });
      a.push(ts);
      const eits = a.takeSections().filter((s) => s.tableId >= 0x4e && s.tableId <= 0x6f);
      t.ok(eits.length > 0, `ch${w.pnr}: EIT present`);
      t.ok(
        eits.every((s) => ((s.data[3]! << 8) | s.data[4]!) === w.pnr),
        `ch${w.pnr}: EIT of its service only`,
      );
      t.ok(
        eits.some((s) => s.data.includes(Buffer.from(w.event, 'latin1'))),
        `ch${w.pnr}: its event`,
      );
      t.equal(a.stats().tr101290.continuityCountError, 0, `ch${w.pnr}: no CC error`);
      const st = (
        demux[want.indexOf(w)]!.status()['inputs'] as { transport: Record<string, unknown> }[]
      )[0]!.transport;
      t.equal(st['present'], true);
      t.ok(
        (st['packetsOut'] as number) > 0 && (st['tablesRewritten'] as number) > 0,
        'counters move',
      );
    }
    await Promise.all(demux.map((d) => d.close()));
    t.equal(splitterConsumers(src.hub), 0, 'the splitter is gone with the last demuxer');
    t.equal(src.hub.size, 1);
  },
);

/** A crafted multiplex on a bus the test drives: programmes 101 and 102, 20 ms cycles. */
function craftedMux(key: string) {
  const hub = new BusHub();
  crafted.set(key, hub);
  const ccs = new Map<number, { n: number }>();
  const c = (pid: number) => ccs.get(pid) ?? ccs.set(pid, { n: 0 }).get(pid)!;
  const state = { with102: true, version102: 0 };
  let tick = 0;
  const cycle = () => {
    tick++;
    const progs = [{ pnr: 101, pid: 0x100 }, ...(state.with102 ? [{ pnr: 102, pid: 0x200 }] : [])];
    const parts = psiPackets(0, [pat(progs)], c(0));
    parts.push(...psiPackets(0x100, [pmt(101, 0x101, [{ type: 0x1b, pid: 0x101 }])], c(0x100)));
    const es102 = [
      { type: 0x1b, pid: 0x201 },
      ...(state.version102 > 0 ? [{ type: 0x0f, pid: 0x202 }] : []),
    ];
    if (state.with102)
      parts.push(...psiPackets(0x200, [pmt(102, 0x201, es102, state.version102)], c(0x200)));
    for (const pid of [0x101, 0x201, 0x202]) {
      parts.push(
        packet({
          pid,
          cc: c(pid).n++ & 15,
          pcr: pid === 0x202 ? undefined : tick * 20 * 27000,
          payload: Buffer.alloc(100, 1),
        }),
      );
    }
    hub.packets(Buffer.concat(parts));
  };
  const timer = setInterval(cycle, 20);
  t.teardown(() => {
    clearInterval(timer);
    crafted.delete(key);
  });
  return state;
}

t.test(
  'crafted multiplex: PMT change followed, programme gone faults the input, return spliced',
  async (t) => {
    const mux = craftedMux('9');
    const s = await stream({
      'stream-name': 'p102',
      'stream-timeout': 1_000_000,
      input: [{ type: 'demuxer', 'mpts-id': 9, pnr: 102 }],
    });
    const input = () => (s.status()['inputs'] as Record<string, unknown>[])[0]!;
    const tr = () => input()['transport'] as Record<string, unknown>;
    await waitFor(() => s.state() === 'running', 8000, 'running');
    t.same(tr()['pids'], [0x201]);
    mux.version102 = 1;
    await waitFor(() => (tr()['pids'] as number[]).includes(0x202), 3000, 'the new PID followed');
    t.equal(tr()['pmtVersionsFollowed'], 1);
    t.equal(s.state(), 'running', 'no restart for a PMT change');
    mux.with102 = false;
    await waitFor(
      () => input()['message'] === 'programme 102 is not in the multiplex',
      5000,
      'the fault',
    );
    t.equal(input()['state'], 'error');
    await waitFor(
      () => s.state() === 'no-signal',
      5000,
      'the stream lost its signal (failover would switch)',
    );
    const splices = (s.status()['splicer'] as { splices: number }).splices;
    mux.with102 = true;
    await waitFor(() => s.state() === 'running', 8000, 'running again');
    t.equal(tr()['programmeReturns'], 1);
    t.ok((s.status()['splicer'] as { splices: number }).splices > splices, 'the return is spliced');
  },
);

t.test('faults: source not running, tuner adapter not running, programme 0 in a PLP', async (t) => {
  const cases = [
    [{ 'mpts-id': 55, pnr: 1 }, 'multiplex stream 55 is not running'],
    [{ 'mpts-id': 1, src: 1, pnr: 1 }, 'tuner adapter 1 is not running'],
    [{ 'mpts-id': 7, pnr: 2 * 65536 }, 'pnr 131072: programme 0 in PLP 1'],
  ] as const;
  for (const [i, [fields, message]] of cases.entries()) {
    const s = await stream({ 'stream-name': `fault${i}`, input: [{ type: 'demuxer', ...fields }] });
    const input = () => (s.status()['inputs'] as Record<string, unknown>[])[0]!;
    await waitFor(() => input()['message'] === message, 3000, message);
    t.equal(input()['state'], 'error', message);
  }
});
