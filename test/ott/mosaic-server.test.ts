// The mosaic through the real server (`bin/sluice.js serve`): six streams — five tiny test
// generators and one udp input nobody sends to — with the mosaic on. `GET /data/mosaic.jpg` is
// decoded to raw RGB with ffmpeg and judged by image analysis: the mean colour of each cell is
// compared with the "no signal" card's (the dead stream's own preview.jpg): five cells differ
// from it, the dead stream's cell matches it. Status and /metrics report the thumbnails.
import { spawn } from 'node:child_process';
import t from 'tap';
import { freePort, startServer, waitFor } from '../helpers/server.ts';

const WIDTH = 96; // thumbnails 96×54
const HEIGHT = 54;
const COLUMNS = 3;
const START_TIMEOUT_MS = 40_000;
/** Mean colour distance (per channel, 0..255) under which a cell is the card. */
const CARD_TOLERANCE = 12;

const generator = (id: number, name: string, pattern: number) => ({
  id,
  'stream-name': name,
  pause: false,
  input: [
    {
      type: 'test',
      width: 160,
      height: 90,
      'frame-rate': 10,
      'gop-interval': 10,
      'video-bitrate': 100,
      'video-pattern': pattern,
      'enable-overlay': false,
    },
  ],
});

/** Decode a JPEG to raw RGB24 with ffmpeg. */
function rgb(jpeg: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      'ffmpeg',
      [
        '-v',
        'error',
        '-f',
        'mjpeg',
        '-i',
        'pipe:0',
        '-f',
        'rawvideo',
        '-pix_fmt',
        'rgb24',
        'pipe:1',
      ],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    const out: Buffer[] = [];
    p.stdout.on('data', (d: Buffer) => out.push(d));
    p.on('error', reject);
    p.on('close', (code) =>
      code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`ffmpeg ${code}`)),
    );
    p.stdin.end(jpeg);
  });
}

/** Mean RGB of the w×h rectangle at (x, y) of an image `stride` pixels wide. */
function mean(px: Buffer, stride: number, x: number, y: number, w: number, h: number): number[] {
  const sum = [0, 0, 0];
  // A margin of 4 pixels: JPEG blocks bleed across the cell edges.
  for (let j = y + 4; j < y + h - 4; j++) {
    for (let i = x + 4; i < x + w - 4; i++) {
      const o = (j * stride + i) * 3;
      sum[0]! += px[o]!;
      sum[1]! += px[o + 1]!;
      sum[2]! += px[o + 2]!;
    }
  }
  const n = (w - 8) * (h - 8);
  return sum.map((v) => v / n);
}

const distance = (a: number[], b: number[]) => Math.max(...a.map((v, i) => Math.abs(v - b[i]!)));

t.test('mosaic of six streams, one dead', async (t) => {
  const deadPort = await freePort();
  const srv = await startServer(t, {
    config: {
      mosaic: { enable: true, columns: COLUMNS, 'thumbnail-width': WIDTH, 'refresh-sec': 1 },
      stream: [
        generator(1, 'a', 0),
        generator(2, 'b', 1),
        {
          id: 3,
          'stream-name': 'dead',
          pause: false,
          'stream-timeout': 1_000_000,
          input: [{ type: 'udp', port: deadPort, 'bind-if': '127.0.0.1' }],
        },
        generator(4, 'c', 17),
        generator(5, 'd', 18),
        generator(6, 'e', 21),
      ],
    },
  });
  const mosaicStatus = async () => {
    const r = await fetch(`${srv.url}/data/status`);
    const body = JSON.stringify(await r.json());
    return body;
  };
  // Every live stream has a thumbnail.
  await waitFor(
    'a thumbnail of each of the five live streams',
    async () => {
      for (const name of ['a', 'b', 'c', 'd', 'e']) {
        const s = await mosaicStatus();
        const m = new RegExp(`"name":"${name}","lastThumbnail":"[^"]+","noSignal":false`).test(s);
        if (!m) return undefined;
      }
      return true;
    },
    START_TIMEOUT_MS,
  ).catch(async (err) => {
    throw new Error(`${(err as Error).message}\nstatus: ${await mosaicStatus()}\n${srv.output()}`);
  });

  const card = await fetch(`${srv.url}/dead/preview.jpg`);
  t.equal(card.status, 200);
  t.equal(card.headers.get('content-type'), 'image/jpeg');
  const cardPx = await rgb(Buffer.from(await card.arrayBuffer()));
  t.equal(cardPx.length, WIDTH * HEIGHT * 3, 'the card is a thumbnail in size');
  const cardMean = mean(cardPx, WIDTH, 0, 0, WIDTH, HEIGHT);

  const live = await fetch(`${srv.url}/a/preview.jpg`);
  t.equal(live.status, 200);
  const livePx = await rgb(Buffer.from(await live.arrayBuffer()));
  t.ok(
    distance(mean(livePx, WIDTH, 0, 0, WIDTH, HEIGHT), cardMean) > CARD_TOLERANCE,
    'a live preview is a picture',
  );

  const grid = await fetch(`${srv.url}/data/mosaic.jpg`);
  t.equal(grid.status, 200);
  t.equal(grid.headers.get('content-type'), 'image/jpeg');
  const px = await rgb(Buffer.from(await grid.arrayBuffer()));
  const gridW = COLUMNS * WIDTH;
  t.equal(px.length, gridW * 2 * HEIGHT * 3, 'three columns, two rows');
  const isCard = [0, 1, 2, 3, 4, 5].map((i) => {
    const x = (i % COLUMNS) * WIDTH;
    const y = Math.floor(i / COLUMNS) * HEIGHT;
    return distance(mean(px, gridW, x, y, WIDTH, HEIGHT), cardMean) <= CARD_TOLERANCE;
  });
  // The streams' order (`order`, then name): a, b, c, d, dead, e.
  t.same(isCard, [false, false, false, false, true, false], 'five pictures and one no-signal card');

  const streamMosaic = async (id: string) =>
    ((await (await fetch(`${srv.url}/data/stream/${id}`)).json()) as { mosaic?: unknown }).mosaic;
  t.match(
    await streamMosaic('a'),
    { lastThumbnail: /^\d{4}-/, noSignal: false },
    'in the stream status',
  );
  t.same(await streamMosaic('dead'), { lastThumbnail: null, noSignal: true });

  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  const made = /^sluice_mosaic_thumbnails_total (\d+)/m.exec(metrics);
  t.ok(made && Number(made[1]) >= 5, 'thumbnails counted in /metrics');
  t.match(metrics, /^sluice_mosaic_decoder_cpu_seconds_total [\d.e-]+/m);
  t.match(metrics, /^sluice_mosaic_thumbnail_failures_total \d+/m);
});
