// Issue 36 item 8: a ladder stays one ladder across an encoder restart. A real server with a test
// source, two transcoder renditions and a `stream-adaptive` group over them (HLS-TS and CMAF):
// after one rendition's encoder restarts (a PATCH of its enc-* field, then its ffmpeg killed),
// segments of the same media time carry the same discontinuity sequence number in both variants
// (RFC 8216 §6.2.4); and the transcoder input says `source stream 1 is not running` while the
// source is paused.
import t, { type Test } from 'tap';
import {
  isPesStart,
  PES_PTS_OFFSET,
  pesTimestampFlags,
  readTimestamp,
} from '../../src/mpegts/pes.ts';
import { LADDER_RENDITIONS, LADDER_TEST_SOURCE, transcoderInput } from '../helpers/ladder.ts';
import { freePort, startServer, waitFor } from '../helpers/server.ts';

const START_TIMEOUT_MS = 40_000;
const RESTART_TIMEOUT_MS = 30_000;
/** Segments of both variants after the restart before the numbers are compared. */
const AFTER_RESTART = 3;
/** Segment duration (s) and window (segments) of every stream and the group. */
const SEGMENT_S = 1;
const WINDOW = 10;
/** A segment of one media time that both variants of a format have not listed within a
 *  window's time never will be: it has left the window by then. */
const LISTED_IN_BOTH_MS = WINDOW * SEGMENT_S * 1000;
/** Segment starts this close (90 kHz: one frame at 25/s) are the same media time. */
const SAME_TIME = 3600;
/** Two renditions the config accepts (`lo`'s 60 kbit/s is under the minimum of 100). */
const [HI, MID] = LADDER_RENDITIONS;
const RENDITIONS = [HI!, MID!];

interface Listed {
  uri: string;
  disc: number;
}

/** Segments of a media playlist with the discontinuity sequence number of each. */
function listed(text: string, base: string): Listed[] {
  let disc = 0;
  const out: Listed[] = [];
  for (const line of text.split('\n')) {
    const m = /^#EXT-X-DISCONTINUITY-SEQUENCE:(\d+)/.exec(line);
    if (m) disc = Number(m[1]);
    else if (line === '#EXT-X-DISCONTINUITY') disc++;
    else if (line && !line.startsWith('#')) out.push({ uri: new URL(line, base).href, disc });
  }
  return out;
}

/** 90 kHz PTS of the first PES with a timestamp on a video stream id in a TS segment. */
function tsStart(b: Buffer): number | undefined {
  for (let o = 0; o + 188 <= b.length; o += 188) {
    if (!(b[o + 1]! & 0x40)) continue; // no PES starts here
    const afc = (b[o + 3]! >> 4) & 3;
    const p = o + 4 + (afc & 2 ? b[o + 4]! + 1 : 0);
    if (isPesStart(b, p) && (b[p + 3]! & 0xf0) === 0xe0 && pesTimestampFlags(b, p) & 0x80)
      return readTimestamp(b, p + PES_PTS_OFFSET);
  }
  return undefined;
}

/** baseMediaDecodeTime of the first `tfdt` box of a CMAF segment. */
function cmafStart(b: Buffer): number | undefined {
  const at = b.indexOf('tfdt');
  if (at < 0) return undefined;
  return b[at + 4] === 1 ? Number(b.readBigUInt64BE(at + 8)) : b.readUInt32BE(at + 8);
}

interface Timed {
  start: number;
  disc: number;
}

async function timed(url: string, start: (b: Buffer) => number | undefined): Promise<Timed[]> {
  const r = await fetch(url);
  if (!r.ok) return [];
  const out: Timed[] = [];
  for (const s of listed(await r.text(), url)) {
    const seg = await fetch(s.uri);
    const at = seg.ok ? start(Buffer.from(await seg.arrayBuffer())) : undefined;
    if (at !== undefined) out.push({ start: at, disc: s.disc });
  }
  return out;
}

const stream = (id: number, name: string, input: Record<string, unknown>) => ({
  id,
  'stream-name': name,
  pause: false,
  'ott-hls': 3,
  'ott-segment-duration': SEGMENT_S,
  'ott-window': WINDOW,
  input: [input],
});

const srv = await startServer(t, {
  config: {
    stream: [
      stream(1, 'src', LADDER_TEST_SOURCE),
      ...RENDITIONS.map(([id, name, enc]) => stream(id, name, transcoderInput(enc))),
    ],
    'stream-adaptive': [
      {
        id: 1,
        'stream-name': 'abr',
        streams: RENDITIONS.map(([id]) => id),
        'ott-hls': 3,
        'ott-segment-duration': SEGMENT_S,
        'ott-window': WINDOW,
      },
    ],
  },
});

const tsUrl = (name: string) => `${srv.url}/abr/${name}/ts.m3u8`;

/** The CMAF video playlist of each rendition, from the group's CMAF master. */
async function cmafUrls(): Promise<string[]> {
  const master = await (await fetch(`${srv.url}/abr/cmaf.m3u8`)).text();
  const uris = master.split('\n').filter((l) => l && !l.startsWith('#'));
  return RENDITIONS.map(([, name]) => {
    const uri = uris.find((u) => u.startsWith(`${name}/`));
    if (!uri) throw new Error(`no CMAF variant of ${name} in\n${master}`);
    return `${srv.url}/abr/${uri}`;
  });
}

async function transport(id: number): Promise<Record<string, unknown>> {
  const d = (await (await fetch(`${srv.url}/data/stream/${id}`)).json()) as {
    inputs?: { transport?: Record<string, unknown>; message?: string }[];
  };
  return { ...d.inputs?.[0]?.transport, message: d.inputs?.[0]?.message };
}

/** Discontinuities in the TS playlist of `name` (its sequence number at the live edge). */
async function edgeDisc(name: string): Promise<number> {
  const r = await fetch(tsUrl(name));
  return r.ok ? (listed(await r.text(), tsUrl(name)).at(-1)?.disc ?? 0) : -1;
}

/** The segments two variants both list at one media time, and how many of them are numbered
 *  `disc` or more. */
async function common(
  urls: string[],
  start: (b: Buffer) => number | undefined,
  disc: number,
): Promise<{ pairs: [Timed, Timed][]; after: number }> {
  const [a, b] = await Promise.all(urls.map((u) => timed(u, start)));
  const pairs: [Timed, Timed][] = [];
  for (const x of a!) {
    const y = b!.find((s) => Math.abs(s.start - x.start) <= SAME_TIME);
    if (y) pairs.push([x, y]);
  }
  return { pairs, after: pairs.filter(([x]) => x.disc >= disc).length };
}

/**
 * Once the restarted rendition's TS playlist lists AFTER_RESTART segments numbered `disc` or more,
 * every segment start both variants list (TS and CMAF) has one number in both.
 */
async function checkOneLadder(t: Test, disc: number): Promise<void> {
  const hi = HI![1];
  await waitFor(
    `${AFTER_RESTART} segments of ${hi} after discontinuity ${disc}`,
    async () => {
      const r = await fetch(tsUrl(hi));
      if (!r.ok) return undefined;
      const after = listed(await r.text(), tsUrl(hi)).filter((s) => s.disc >= disc);
      return after.length >= AFTER_RESTART ? true : undefined;
    },
    RESTART_TIMEOUT_MS,
  );
  const formats: [string, () => Promise<string[]>, (b: Buffer) => number | undefined][] = [
    ['HLS-TS', async () => RENDITIONS.map(([, name]) => tsUrl(name)), tsStart],
    ['CMAF', cmafUrls, cmafStart],
  ];
  for (const [format, urls, start] of formats) {
    // Each format's writer lists a segment when it has it, not when the other format does:
    // both variants are read again until they list one of the same time after the restart.
    const look = async () => common(await urls(), start, disc);
    let both = await look();
    const began = Date.now();
    const waited = both.after === 0;
    while (both.after === 0 && Date.now() - began < LISTED_IN_BOTH_MS) {
      await new Promise((r) => setTimeout(r, (SEGMENT_S * 1000) / 2));
      both = await look();
    }
    if (waited) t.comment(`${format}: none in both at first, ${Date.now() - began} ms to come`);
    for (const [x, y] of both.pairs)
      t.equal(y.disc, x.disc, `${format}: the segment at ${x.start} has one number in both`);
    t.ok(
      both.after >= 1,
      `${format}: ${both.after} of ${both.pairs.length} common segments after it`,
    );
  }
  // DASH: the group's one Period is the run after the restart, with both renditions in it.
  const mpd = await (await fetch(`${srv.url}/abr/index.mpd`)).text();
  t.match(mpd, `<Period id="p${disc}"`, `DASH: Period p${disc}`);
  for (const [, name] of RENDITIONS)
    t.match(mpd, `<Representation id="${name}-`, `DASH: ${name} in the Period`);
}

t.test('a PATCH of one rendition’s enc-* field', async (t) => {
  await waitFor(
    'segments in both variants',
    async () => ((await edgeDisc(HI![1])) >= 0 && (await edgeDisc(MID![1])) >= 0) || undefined,
    START_TIMEOUT_MS,
  );
  const before = await edgeDisc(HI![1]);
  await patch(t, HI![0], {
    input: [transcoderInput({ ...HI![2], 'enc-video-bitrate': 150 })],
  });
  await checkOneLadder(t, before + 1);
});

t.test('one rendition’s encoder killed', async (t) => {
  const before = await edgeDisc(HI![1]);
  const pid = (await transport(HI![0])).pid as number;
  t.type(pid, 'number', 'the encoder runs');
  process.kill(pid, 'SIGKILL');
  await checkOneLadder(t, before + 1);
});

/** PATCH stream `id` with `body`; the answer must be 2xx. */
async function patch(t: Test, id: number, body: Record<string, unknown>): Promise<void> {
  const r = await fetch(`${srv.url}/config/stream/${id}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify(body),
  });
  t.ok(r.ok, `PATCH of stream ${id} answered ${r.status}`);
}

/** Each rendition's input message ('' when it has none). */
async function messages(): Promise<string[]> {
  return Promise.all(
    RENDITIONS.map(async ([id]) => ((await transport(id)).message as string) ?? ''),
  );
}

/** Once every rendition's input says `want` (or the timeout): what they say. */
async function messagesBecome(want: string[]): Promise<string[]> {
  const same = async () => {
    const m = await messages();
    return JSON.stringify(m) === JSON.stringify(want) ? m : undefined;
  };
  return waitFor('the input messages', same, RESTART_TIMEOUT_MS).catch(() => messages());
}

const NOT_RUNNING = RENDITIONS.map(() => 'source stream 1 is not running');

t.test('the source without signal, then paused: its transcoders say so', async (t) => {
  // A UDP input nobody sends to: the source stream runs and delivers nothing.
  await patch(t, 1, { input: [{ type: 'udp', address: '127.0.0.1', port: await freePort() }] });
  t.same(await messagesBecome(NOT_RUNNING), NOT_RUNNING, 'source without signal');
  await patch(t, 1, { input: [LADDER_TEST_SOURCE] });
  const none = RENDITIONS.map(() => '');
  t.same(await messagesBecome(none), none, 'source back: no message');
  await patch(t, 1, { pause: true });
  t.same(await messagesBecome(NOT_RUNNING), NOT_RUNNING, 'source paused');
});
