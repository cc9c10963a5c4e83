// The demuxer's acceptance over a real network peer: an MPTS of five programmes made by ffmpeg
// (H.264 + AAC, MPEG-2 + MP2, H.264 + AC-3, HEVC + AAC, MPEG-2 + MP2; SDT from ffmpeg, EIT
// present/following per service crafted and woven in) played by multicat over UDP (restarted
// when it reaches the end) into an `mpts: true` stream. Five demuxer streams with `epg-export`
// each decode with ffprobe as one programme with its codecs and service name, and each channel's
// JSON day on /data/epg/channel carries its own service's events only. Then multicat is switched
// to a copy of the file whose programme 105 has a new PMT version with an added PID: the demuxer
// follows it without a restart and passes the new PID.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import t from 'tap';
import { epgRoutes } from '../../src/api/routes/epg.ts';
import { epgDriver } from '../../src/drivers/epg.ts';
import { EPG_SERVICE } from '../../src/epg/runtime.ts';
import { applied } from '../helpers/desired.ts';
import { eitSection, shortEvent } from '../helpers/epg-eit.ts';
import {
  captureHttp,
  type MptsProgramme,
  makeMpts,
  probePrograms,
  readPmts,
} from '../helpers/mpts.ts';
import {
  freePort,
  httpFor,
  makeHost,
  streamSet,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';
import { crc32mpeg, PKT, packet } from '../helpers/ts-craft.ts';

const MUX_ID = 7;
/** Long enough for the decode and EPG checks; the player restarts the file if it is not. */
const SECONDS = 20;
/** Programme whose PMT changes in the second file, and the PID its new version adds. */
const CHANGED = 105;
const NEW_PID = 0x150;

const dir = tempDir(t, 'sluice-demux-mc-');
const host = makeHost(dir);
const base = await httpFor(t, host.router);
const { open: stream } = streamSet(t, host);

/** HEVC for the fourth programme when this ffmpeg has libx265, else H.264 + MP2. */
const HAS_X265 = spawnSync('ffmpeg', ['-hide_banner', '-encoders'], {
  encoding: 'utf8',
}).stdout.includes('libx265');

interface Channel extends MptsProgramme {
  codecs: string[];
  events: [string, string];
}
const channels: Channel[] = [
  {
    pnr: 101,
    title: 'Channel One',
    video: 'libx264',
    audio: 'aac',
    codecs: ['aac', 'h264'],
    events: ['News at one', 'Quiz at one'],
  },
  {
    pnr: 102,
    title: 'Channel Two',
    video: 'mpeg2video',
    audio: 'mp2',
    codecs: ['mp2', 'mpeg2video'],
    events: ['Film at two', 'Opera at two'],
  },
  {
    pnr: 103,
    title: 'Channel Three',
    video: 'libx264',
    audio: 'ac3',
    codecs: ['ac3', 'h264'],
    events: ['Sport at three', 'Golf at three'],
  },
  HAS_X265
    ? {
        pnr: 104,
        title: 'Channel Four',
        video: 'libx265',
        audio: 'aac',
        codecs: ['aac', 'hevc'],
        events: ['Drama at four', 'Cooking at four'],
      }
    : {
        pnr: 104,
        title: 'Channel Four',
        video: 'libx264',
        audio: 'mp2',
        codecs: ['h264', 'mp2'],
        events: ['Drama at four', 'Cooking at four'],
      },
  {
    pnr: 105,
    title: 'Channel Five',
    video: 'mpeg2video',
    audio: 'mp2',
    codecs: ['mp2', 'mpeg2video'],
    events: ['Cartoons at five', 'Travel at five'],
  },
];

/** EIT p/f actual of a service: the present event started ten minutes ago, then the next. */
function eitPf(c: Channel, start: number): Buffer {
  return eitSection({
    tableId: 0x4e,
    sid: c.pnr,
    tsid: 1,
    onid: 1,
    events: c.events.map((title, i) => ({
      id: c.pnr * 10 + i,
      start: start + i * 3600,
      duration: 3600,
      descriptors: [shortEvent('eng', Buffer.from(title), Buffer.from(`${c.title} ${i}`))],
    })),
  });
}

/** A copy of `ts` where programme `pnr`'s PMT has the next version and one more elementary
 *  stream (private data on `pid`), and a packet on that PID follows each of its PMT packets. */
function withPmtChange(ts: Buffer, pnr: number, pid: number): Buffer {
  const info = readPmts(ts).find((p) => p.pnr === pnr)!;
  const old = info.section;
  const body = Buffer.concat([
    old.subarray(0, old.length - 4),
    Buffer.from([0x06, 0xe0 | (pid >> 8), pid & 0xff, 0xf0, 0x00]),
  ]);
  body.writeUInt16BE(0xb000 | (body.length + 4 - 3), 1);
  body[5] = (body[5]! & 0xc1) | ((((body[5]! >> 1) + 1) & 0x1f) << 1);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32mpeg(body));
  const section = Buffer.concat([Buffer.from([0]), body, crc]);
  const out: Buffer[] = [];
  let cc = 0;
  for (let o = 0; o + PKT <= ts.length; o += PKT) {
    const p = ts.subarray(o, o + PKT);
    if ((((p[1]! & 0x1f) << 8) | p[2]!) !== info.pmtPid || (p[1]! & 0x40) === 0) {
      out.push(p);
      continue;
    }
    out.push(packet({ pid: info.pmtPid, cc: p[3]! & 0x0f, pusi: true, payload: section }));
    out.push(packet({ pid, cc: cc++ & 15, payload: Buffer.alloc(184, 0x5a) }));
  }
  return Buffer.concat(out);
}

/** multicat playing `file` (with its .aux from ingests) to `port` in real time, started again
 *  each time it reaches the end (exit 0), until stop(). */
function play(file: string, port: number): { stop(): Promise<void> } {
  let child: ChildProcess | undefined;
  let stopped = false;
  const start = () => {
    child = spawn('multicat', ['-U', file, `127.0.0.1:${port}`], { stdio: 'ignore' });
    child.on('exit', (code) => {
      if (!stopped && code === 0) start();
    });
  };
  start();
  const stop = async () => {
    stopped = true;
    const c = child!;
    if (c.exitCode !== null || c.signalCode !== null) return;
    await new Promise((r) => {
      c.once('exit', r);
      c.kill('SIGKILL');
    });
  };
  t.teardown(stop);
  return { stop };
}

t.test('five demuxers on an MPTS played by multicat over UDP', async (t) => {
  const epg = await epgDriver.create(applied('epg', 'epg', {}), host);
  t.teardown(() => epg.close());
  const app = Fastify();
  await app.register(epgRoutes, { ctx: { services: host.services } });
  t.teardown(() => app.close());

  if (!HAS_X265) t.comment('ffmpeg has no libx265: programme 104 is H.264 + MP2');
  const now = Math.floor(Date.now() / 1000);
  const start = now - (now % 60) - 600;
  const fileA = join(dir, 'mpts.ts');
  makeMpts(
    fileA,
    channels,
    SECONDS,
    channels.map((c) => eitPf(c, start)),
  );
  const fileB = join(dir, 'mpts-pmt1.ts');
  writeFileSync(fileB, withPmtChange(readFileSync(fileA), CHANGED, NEW_PID));
  const pcrPid = readPmts(readFileSync(fileA))[0]!.pcrPid;
  for (const f of [fileA, fileB]) {
    const ing = spawnSync('ingests', ['-p', String(pcrPid), f]);
    t.equal(ing.status, 0, `ingests made the timing file of ${f}`, { stderr: `${ing.stderr}` });
  }

  const port = await freePort();
  const mux = await stream({
    id: MUX_ID,
    'stream-name': 'mux',
    mpts: true,
    input: [{ type: 'udp', port }],
  });
  const demux = await Promise.all(
    channels.map((c) =>
      stream({
        'stream-name': `ch${c.pnr}`,
        'epg-export': true,
        'epg-channel': `ch${c.pnr}.tv`,
        input: [{ type: 'demuxer', 'mpts-id': MUX_ID, pnr: c.pnr }],
      }),
    ),
  );
  const playerA = play(fileA, port);
  await waitFor(() => mux.state() === 'running', 8000, 'the multiplex stream running on multicat');
  await waitFor(
    () => demux.every((d) => d.state() === 'running'),
    10_000,
    'the five demuxer streams running',
  );

  const probes = await Promise.all(channels.map((c) => probePrograms(`${base}/ch${c.pnr}/mpegts`)));
  for (const [i, c] of channels.entries()) {
    const programs = probes[i]!;
    t.equal(programs.length, 1, `ch${c.pnr}: exactly one programme`);
    t.equal(programs[0]?.program_num, c.pnr, `ch${c.pnr}: programme ${c.pnr}`);
    t.equal(programs[0]?.tags?.service_name, c.title, `ch${c.pnr}: its service name from the SDT`);
    t.same(
      programs[0]?.streams.map((s) => s.codec_name).sort(),
      c.codecs,
      `ch${c.pnr}: ${c.codecs.join(' + ')}`,
    );
  }

  type Day = { event: { title: string; start: number }[] };
  const titlesOf = async (ch: string): Promise<string[]> => {
    const ats = [...new Set([start, start + 3600].map((s) => s - (s % 86_400)))];
    const days = await Promise.all(
      ats.map(
        async (at) =>
          JSON.parse((await app.inject(`/data/epg/channel?src=0&ch=${ch}&t=${at}`)).body) as Day,
      ),
    );
    return days.flatMap((d) => d.event.map((e) => e.title));
  };
  for (const c of channels) {
    const titles = await waitFor(
      async () => {
        const got = await titlesOf(`ch${c.pnr}.tv`);
        return got.length >= 2 ? got : undefined;
      },
      8000,
      `ch${c.pnr}: events on /data/epg/channel`,
    );
    t.same(titles, c.events, `ch${c.pnr}: its own service's events and no other's`);
  }
  // A service's EIT reaching another service's stream would be stored under its dotted id
  // (onid.tsid.sid): the importer has seen none.
  const db = host.services.get(EPG_SERVICE)!.source(0)!.db;
  t.same(
    channels.filter((c) => db.channel(`1.1.${c.pnr}`)).map((c) => c.pnr),
    [],
    "no EIT of a service reached another service's stream",
  );

  // The PMT version change: multicat switched to the second file.
  const changed = demux[channels.findIndex((c) => c.pnr === CHANGED)]!;
  const tr = () =>
    (changed.status()['inputs'] as { transport: Record<string, unknown> }[])[0]!.transport;
  const before = tr()['pids'] as number[];
  t.notOk(before.includes(NEW_PID), `ch${CHANGED}: the new PID not passed before the change`);
  await playerA.stop();
  play(fileB, port);
  await waitFor(
    () => (tr()['pids'] as number[]).includes(NEW_PID),
    8000,
    `ch${CHANGED}: the new PMT followed`,
  );
  t.ok((tr()['pmtVersionsFollowed'] as number) >= 1, 'pmtVersionsFollowed counted');
  t.equal(changed.state(), 'running', 'no restart for a PMT change');
  const ts = await captureHttp(`${base}/ch${CHANGED}/mpegts`, 50_000);
  let onNew = 0;
  for (let o = 0; o + PKT <= ts.length; o += PKT)
    if ((((ts[o + 1]! & 0x1f) << 8) | ts[o + 2]!) === NEW_PID) onNew++;
  t.ok(onNew > 0, `packets of the new PID in ch${CHANGED}'s output (${onNew})`);
});
