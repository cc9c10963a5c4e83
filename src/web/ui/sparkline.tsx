// A bit-rate sparkline for a list row: two polylines (in, out) in a small SVG. Rows come and
// go as the list scrolls, so this is plain SVG; the stream page draws its chart with uPlot.

interface Props {
  series: [number[], number[]] | undefined;
  width?: number;
  height?: number;
}

function points(values: number[], max: number, w: number, h: number, n: number): string {
  const step = n > 1 ? w / (n - 1) : w;
  const off = n - values.length;
  return values
    .map((v, i) => `${((off + i) * step).toFixed(1)},${(h - 1 - (v / max) * (h - 2)).toFixed(1)}`)
    .join(' ');
}

/** Samples across the width (a minute at one a second). */
const SPAN = 60;

export function Sparkline({ series, width = 120, height = 28 }: Props) {
  const [inp = [], out = []] = series ?? [];
  const max = Math.max(1, ...inp, ...out);
  return (
    <svg
      class="spark"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label="bit rate, last minute"
    >
      <polyline class="spark-in" points={points(inp, max, width, height, SPAN)} />
      <polyline class="spark-out" points={points(out, max, width, height, SPAN)} />
    </svg>
  );
}
