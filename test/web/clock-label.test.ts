// The dashboard chart's axis labels are times of day with no date part, distinct per tick,
// including across midnight (where uPlot's own format added the date and labels ran together).
import t from 'tap';
import { clockLabel } from '../../src/web/ui/clock-label.ts';

t.test('time-of-day labels, no date', async (t) => {
  // Ticks 10 s apart across a local midnight.
  const midnight = new Date(2026, 11, 8, 0, 0, 0).getTime() / 1000;
  const ticks = [-20, -10, 0, 10, 20].map((d) => midnight + d);
  const labels = ticks.map(clockLabel);
  for (const l of labels) {
    t.notMatch(l, /2026|\/|12\/|Dec/, `${l}: no date part`);
    t.match(l, /\d{1,2}:\d{2}:\d{2}/, `${l}: hours, minutes and seconds`);
  }
  t.equal(new Set(labels).size, labels.length, 'every tick its own label');
});
