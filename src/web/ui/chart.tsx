// The stream page's bit-rate chart: uPlot over the feed's history (in and out, kbit/s).
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { clockLabel } from './clock-label.ts';

/** Least room between two time labels, pixels ("20:59:30" is about 55 px wide). */
const X_TICK_SPACE_PX = 90;

/** A tick's time of day (the chart spans a minute: the date says nothing). */

interface Props {
  series: [number[], number[]] | undefined;
  /** Changes whenever the series did (the arrays are mutated in place). */
  tick: number;
  intervalMs?: number;
}

function data(series: Props['series'], intervalMs: number): uPlot.AlignedData {
  const [inp = [], out = []] = series ?? [];
  const now = Date.now() / 1000;
  const xs = inp.map((_, i) => now - ((inp.length - 1 - i) * intervalMs) / 1000);
  return [xs, inp, out];
}

export function RateChart({ series, tick, intervalMs = 1000 }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const css = getComputedStyle(document.documentElement);
    const color = (v: string) => css.getPropertyValue(v).trim() || '#888';
    const p = new uPlot(
      {
        width: el.clientWidth || 600,
        height: 160,
        axes: [
          {
            stroke: color('--fg-muted'),
            grid: { stroke: color('--line') },
            // One line per tick, time of day only, ticks far enough apart for it: uPlot's
            // default puts the date under the first tick and ran it into the next label.
            space: X_TICK_SPACE_PX,
            values: (_u, splits) => splits.map(clockLabel),
          },
          {
            stroke: color('--fg-muted'),
            grid: { stroke: color('--line') },
            values: (_u, v) => v.map((x) => `${x}`),
            label: 'kbit/s',
          },
        ],
        series: [
          {},
          { label: 'in', stroke: color('--in'), width: 2 },
          { label: 'out', stroke: color('--out'), width: 2 },
        ],
      },
      data(series, intervalMs),
      el,
    );
    plot.current = p;
    const resize = new ResizeObserver(() => p.setSize({ width: el.clientWidth, height: 160 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      p.destroy();
      plot.current = null;
    };
  }, []);
  useEffect(() => {
    plot.current?.setData(data(series, intervalMs));
  }, [tick]);
  return <div class="chart" ref={box} role="img" aria-label="bit rate in and out" />;
}
