// The example's demo guide: valid XMLTV (xmltv-util's validator) covering today.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';

t.test('demo guide is valid XMLTV and covers now', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-guide-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, 'guide.xml');
  execFileSync('npx', ['--no-install', 'tsx', 'scripts/demo-guide.ts', out, 'demo.sluice']);
  const res = execFileSync('tv_validate_file', ['--dtd-file', '/usr/share/xmltv/xmltv.dtd', out], {
    encoding: 'utf8',
  });
  t.match(res, /Validated ok/);
  const xml = readFileSync(out, 'utf8');
  const now = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const starts = [...xml.matchAll(/start="(\d{14})/g)].map((m) => m[1]!);
  t.ok(starts[0]! < now && starts.at(-1)! > now, 'the schedule spans the present');
});
