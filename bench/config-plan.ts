// Benchmark: load + validate + plan of a 10,000-stream config. The planner's figures stand
// beside a baseline doing the least comparable work on the same specs in the same run: a
// JSON.stringify of both sides compared as strings (it finds *whether* a spec changed, not
// what, and knows nothing of apply classes or secrets).
// Equal work: no; the baseline is the least work that answers "did anything change", over the
// same loaded specs (both sides built in the same key order), best of 5 each, CPU time of this
// process beside wall time. Load + validate has no peer; it is timed once against the goal.
// Run: npx tsx bench/config-plan.ts [streams]   (default 10000)
// Figures: printed; copy them to bench/RESULTS.md.
import { fieldRules } from '../src/config/schema.ts';
import type { DesiredState, Resource } from '../src/config/types.ts';
import { plan } from '../src/reconciler/plan.ts';
import { renderPlanText } from '../src/reconciler/render.ts';
import { benchHeader } from './lib/header.ts';

benchHeader('config-plan');

const STREAMS = Number(process.argv[2] ?? 10_000);
const ROUNDS = 5;

function configText(n: number, changed?: number): string {
  const stream = [];
  for (let i = 1; i <= n; i++) {
    const g = `239.${(i >> 8) & 255}.${i & 255}`;
    stream.push({
      id: i,
      'stream-name': `ch${i}`,
      'display-name': `Channel ${i}`,
      pause: false,
      'stream-timeout': i === changed ? 5_000_000 : 10_000_000,
      tag: ['bench', `g${i % 10}`],
      input: [
        { type: 'udp', address: `${g}.1`, port: 5000 },
        { type: 'udp', address: `${g}.2`, port: i === changed ? 5002 : 5001 },
      ],
      output: [{ type: 'udp', address: `${g}.3`, port: 6000 }],
    });
  }
  return JSON.stringify({ 'x-svc-version': '2.0.2.361', stream }, null, 2);
}

/** Wall time and this process's CPU time (all threads, GC included) of one call. */
function time<T>(fn: () => T): { ms: number; cpu: number; value: T } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = fn();
  const c = process.cpuUsage(c0);
  return { ms: performance.now() - t0, cpu: (c.user + c.system) / 1000, value };
}

/** Best of ROUNDS, to keep the shared machine's noise out. */
function best<T>(fn: () => T): { ms: number; cpu: number; value: T } {
  const r = time(fn);
  for (let i = 1; i < ROUNDS; i++) {
    const x = time(fn);
    if (x.ms < r.ms) r.ms = x.ms;
    if (x.cpu < r.cpu) r.cpu = x.cpu;
  }
  return r;
}

/** Baseline: stringify both sides (a new resource: its spec alone) and compare strings. */
function baseline(d: DesiredState, actual: Map<string, Resource>): number {
  let changed = 0;
  for (const [id, r] of d.resources) {
    const a = actual.get(id);
    const s = JSON.stringify(r.spec);
    if (!a || JSON.stringify(a.spec) !== s) changed++;
  }
  return changed;
}

let loadConfigText: ((text: string) => { desired: DesiredState }) | undefined;
try {
  ({ loadConfigText } = await import('../src/config/parse.ts'));
} catch (e) {
  console.log(`(config loader not available: ${(e as Error).message})`);
}
if (!loadConfigText) throw new Error('bench needs src/config/parse.ts loadConfigText');

const text = configText(STREAMS);
const textChanged = configText(STREAMS, Math.ceil(STREAMS / 2));
const load = time(() => loadConfigText!(text));
const d = load.value.desired;
const d2 = loadConfigText(textChanged).desired;
const actual = new Map([...d.resources].map(([k, r]) => [k, structuredClone(r)]));
const empty = new Map<string, Resource>();

type Row = [string, { ms: number; cpu: number }, { ms: number; cpu: number }];
const rows: Row[] = [];
const unchanged = best(() => plan(d, actual, fieldRules));
rows.push(['nothing changed', unchanged, best(() => baseline(d, actual))]);
const one = best(() => plan(d2, actual, fieldRules));
rows.push(['one stream changed', one, best(() => baseline(d2, actual))]);
const all = best(() => plan(d, empty, fieldRules));
rows.push(['all created (first start)', all, best(() => baseline(d, empty))]);
const render = best(() => renderPlanText(all.value));

if (unchanged.value.summary.change !== 0 || one.value.summary.change !== 1) {
  throw new Error('bench sanity: unexpected plan summary');
}

const mb = (n: number) => (n / 2 ** 20).toFixed(0);
console.log(
  `config: ${STREAMS} streams, ${(text.length / 2 ** 20).toFixed(1)} MiB of JSON, ${d.resources.size} resources`,
);
console.log(
  `load + validate + desired (loadConfigText, once): wall ${load.ms.toFixed(0)} ms, cpu ${load.cpu.toFixed(0)} ms`,
);
console.log(
  `render text of the all-create plan (${all.value.changes.reduce((n, c) => n + c.fields.length, 0)} fields): wall ${render.ms.toFixed(0)} ms, cpu ${render.cpu.toFixed(0)} ms`,
);
console.log(
  'best of 5; cpu = process CPU time (all threads), wall inflated when the machine is shared',
);
console.log(
  '| plan case | sluice plan wall / cpu ms | JSON.stringify compare wall / cpu ms | ratio (cpu) |',
);
console.log('|---|---:|---:|---:|');
const f = (x: { ms: number; cpu: number }) => `${x.ms.toFixed(0)} / ${x.cpu.toFixed(0)}`;
for (const [name, p, b] of rows) {
  console.log(`| ${name} | ${f(p)} | ${f(b)} | ${(p.cpu / Math.max(b.cpu, 0.001)).toFixed(2)}× |`);
}
console.log(`peak RSS: ${mb(process.resourceUsage().maxRSS * 1024)} MiB`);
