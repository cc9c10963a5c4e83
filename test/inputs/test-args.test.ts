// The test generator's overlay, rendered by the real ffmpeg: text with quotes, colons, commas,
// brackets, % and backslashes survives drawtext escaping, and a long line is sized to fit the
// picture instead of being cut off at both edges.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { overlayFontSize, testGeneratorArgs } from '../../src/inputs/test/args.ts';

const W = 720;
const H = 576;

/** Render one frame of the generator's -vf on black; returns the luma plane. */
function render(cfg: Record<string, unknown>): Buffer {
  const args = testGeneratorArgs({ width: W, height: H, ...cfg });
  const vf = args[args.indexOf('-vf') + 1]!;
  const r = spawnSync(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      `color=c=black:size=${W}x${H}`,
      '-vf',
      vf,
      '-frames:v',
      '1',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'gray',
      '-',
    ],
    { maxBuffer: W * H * 2 },
  );
  if (r.status !== 0) throw new Error(`ffmpeg: ${r.stderr}`);
  return r.stdout;
}

/** First and last column with a white (text) pixel in rows [y0, y1). */
function textColumns(img: Buffer, y0: number, y1: number): [number, number] {
  let lo = W;
  let hi = -1;
  for (let y = y0; y < y1; y++) {
    for (let x = 0; x < W; x++) {
      if (img[y * W + x]! > 200) {
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
    }
  }
  return [lo, hi];
}

t.test('overlay text with shell and filter metacharacters renders, and fits', async (t) => {
  const text = `it's "quoted": a:b, c;d [x] 100% \\back and a long tail of words here`;
  const img = render({ 'text-overlay': text, 'time-format': '%Y-%m-%d %H:%M:%S' });
  t.equal(img.length, W * H, 'one frame rendered (the filter graph parsed)');
  const [lo, hi] = textColumns(img, 0, H / 4);
  t.ok(hi > lo, 'text drawn at the top');
  t.ok(lo >= 16 && hi < W - 16, `top text within the picture (columns ${lo}..${hi} of ${W})`);
  const [clo, chi] = textColumns(img, (H * 3) / 4, H);
  t.ok(chi > clo && clo >= 16 && chi < W - 16, `clock within the picture (${clo}..${chi})`);
});

t.test('font size: 1/14 of the height, smaller only when the line is too long', async (t) => {
  t.equal(overlayFontSize(1920, 1080, 'short'), 77);
  t.ok(overlayFontSize(720, 576, 'x'.repeat(70)) < 41, 'long line shrinks');
  t.equal(overlayFontSize(64, 64, 'x'.repeat(500)), 8, 'never below 8 px');
});

t.test('the SDT names the stream, not ffmpeg', async (t) => {
  const args = testGeneratorArgs({}, 'news hd');
  const meta = args.flatMap((a, i) => (args[i - 1] === '-metadata' ? [a] : []));
  t.same(meta, ['service_name=news hd', 'service_provider=sluice']);
});
