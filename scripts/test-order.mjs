#!/usr/bin/env node
// How scripts/test runs the suite. `buckets N` splits the test files that may run beside
// others into N lists of about equal recorded duration (longest first, each to the list with
// the least so far), one line per list, files separated by spaces: scripts/test runs one tap
// per list at once (tap itself sorts the files it is given, so a longest-first order cannot be
// had from one tap). `serial` prints the files of package.json's tap.serial list (timing- or
// load-sensitive), run alone after the others. Durations come from the last local run
// (.tap/test-results) or, on a fresh clone, from test/durations.json (`node
// scripts/test-order.mjs record` rewrites it from the last run). A file with no recorded
// duration counts as a long one.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const RECORDED = join(root, 'test/durations.json');
/** Seconds assumed for a file never timed: early, beside the long ones. */
const UNKNOWN_S = 60;

function testFiles(dir) {
  const out = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'helpers' && e.name !== 'fixtures') out.push(...testFiles(rel));
    } else if (e.name.endsWith('.test.ts')) out.push(rel);
  }
  return out;
}

/** Seconds each file took in the last local run (tap's results). */
function lastRun() {
  const times = {};
  const dir = join(root, '.tap/test-results');
  if (!existsSync(dir)) return times;
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.tap')) {
        const m = [...readFileSync(p, 'utf8').matchAll(/^# time=([0-9.]+)ms$/gm)].pop();
        if (m)
          times[relative(dir, p).slice(0, -'.tap'.length)] = Math.round(Number(m[1]) / 100) / 10;
      }
    }
  };
  walk(dir);
  return times;
}

const files = testFiles('test').sort();
const mode = process.argv[2];
if (mode === 'record') {
  const times = lastRun();
  const kept = Object.fromEntries(
    files.filter((f) => times[f] !== undefined).map((f) => [f, times[f]]),
  );
  writeFileSync(RECORDED, `${JSON.stringify(kept, null, 2)}\n`);
  console.log(`${Object.keys(kept).length} durations written to ${relative(root, RECORDED)}`);
} else if (mode === 'buckets' || mode === 'serial') {
  const serial = new Set(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).tap.serial);
  const recorded = existsSync(RECORDED) ? JSON.parse(readFileSync(RECORDED, 'utf8')) : {};
  const local = lastRun();
  const seconds = (f) => local[f] ?? recorded[f] ?? UNKNOWN_S;
  const chosen = files.filter((f) => serial.has(f) === (mode === 'serial'));
  if (mode === 'serial') {
    for (const f of chosen) console.log(f);
  } else {
    const n = Number(process.argv[3]);
    if (!Number.isInteger(n) || n < 1 || n > 16) throw new Error('buckets: a count from 1 to 16');
    const lists = Array.from({ length: n }, () => ({ total: 0, files: [] }));
    chosen.sort((a, b) => seconds(b) - seconds(a) || a.localeCompare(b));
    for (const f of chosen) {
      const least = lists.reduce((m, l) => (l.total < m.total ? l : m));
      least.files.push(f);
      least.total += seconds(f);
    }
    for (const l of lists) if (l.files.length) console.log(l.files.join(' '));
  }
} else {
  console.error('usage: test-order.mjs buckets N | serial | record');
  process.exit(2);
}
