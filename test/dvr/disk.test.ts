// Disk figures: usage is computed like df (used / (used + available)), so blocks reserved for
// root do not hide a full disk from max-usage; checked against df on the real disk.
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import t from 'tap';
import { figuresOf, statfsProbe, usedPercent } from '../../src/dvr/disk.ts';

t.test('reserved blocks do not count as free capacity', async (t) => {
  // 1000 blocks, 100 free of which 50 are reserved for root: df says 900 / 950 = 94.7 %.
  const f = figuresOf({ blocks: 1000, bsize: 4096, bfree: 100, bavail: 50 });
  t.equal(f.used, 900 * 4096);
  t.equal(f.free, 50 * 4096);
  t.equal(f.total, 950 * 4096);
  t.equal(Math.round(usedPercent(f) * 10) / 10, 94.7);
});

t.test('used-percent agrees with df on the real disk', async (t) => {
  const dir = tmpdir();
  const out = execFileSync('df', ['-P', '-B1', dir], { encoding: 'utf8' }).trim().split('\n');
  const cols = out[out.length - 1]!.split(/\s+/);
  const dfPercent = Number(cols[4]!.replace('%', ''));
  const pct = usedPercent(await statfsProbe(dir));
  // df rounds up to a whole percent; the disk may move a little between the two reads.
  t.ok(
    Math.abs(Math.ceil(pct) - dfPercent) <= 1,
    `sluice ${pct.toFixed(2)} % vs df ${dfPercent} %`,
  );
});
