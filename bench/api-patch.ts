// Benchmark: admin API PATCH round trip (merge patch → validate the whole → minimal write with
// fsync → plan) under 50 concurrent clients, beside a bare node:http peer that receives the
// same requests and only does the floor of the work: one serialised atomic write (temp file,
// fsync, rename, fsync dir) of a file of the same size per request.
// Equal work: no. Both answer the same PATCHes from the same client loops (one keep-alive agent,
// 50 sockets, in this process), one after the other, both behind node:http in this process, both
// with edits serialised (the same SerialQueue); the peer parses the body and writes, sluice also
// applies the patch, validates the whole document and plans. The peer is not tuned further.
// Run: npx tsx bench/api-patch.ts [streams=100] [requests=1000] [clients=50]
// Figures: printed; copy them to bench/RESULTS.md.
import { mkdtemp, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/api/app.ts';
import { ConfigServiceImpl, type DesiredSink, SerialQueue } from '../src/config/service.ts';
import { fieldRules, formatConfig, loadConfigText } from '../src/config/store.ts';
import type { DesiredState, Resource } from '../src/config/types.ts';
import { FilePersister } from '../src/config/watch.ts';
import { UserTable } from '../src/drivers/users-table.ts';
import { silentLogger } from '../src/log.ts';
import { OttRouter } from '../src/ott/router.ts';
import { plan } from '../src/reconciler/plan.ts';
import { systemClock } from '../src/util/clock.ts';
import { Services } from '../src/util/services.ts';
import { benchHeader } from './lib/header.ts';

const STREAMS = Number(process.argv[2] ?? 100);
const REQUESTS = Number(process.argv[3] ?? 1000);
const CLIENTS = Number(process.argv[4] ?? 50);

function configDoc(n: number): Record<string, unknown> {
  const stream = [];
  for (let i = 1; i <= n; i++) {
    stream.push({
      id: i,
      'stream-name': `ch${i}`,
      'display-name': `Channel ${i}`,
      pause: false,
      input: [{ type: 'udp', address: `239.1.${i >> 8}.${i & 255}`, port: 5000 }],
      output: [{ type: 'udp', address: `239.2.${i >> 8}.${i & 255}`, port: 6000 }],
    });
  }
  return { stream };
}

/** The reconcile loop's planning side: real plan against the last submitted state. */
class PlanningSink implements DesiredSink {
  actual = new Map<string, Resource>();
  plan(desired: DesiredState) {
    return plan(desired, this.actual, fieldRules);
  }
  submit(desired: DesiredState) {
    this.actual = new Map(desired.resources);
  }
  reportInvalid() {}
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

/** The peer's write: the same steps as the config store's atomic write, nothing else. */
async function atomicWrite(file: string, text: string): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await open(tmp, 'w', 0o600);
  await fh.writeFile(text, 'utf8');
  await fh.sync();
  await fh.close();
  await rename(tmp, file);
  const dh = await open(path.dirname(file), 'r');
  await dh.sync();
  await dh.close();
}

function patch(agent: Agent, port: number, id: number, n: number): Promise<number> {
  const body = JSON.stringify({ 'display-name': `Channel ${id} v${n}` });
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'PATCH',
        path: `/config/stream/${id}`,
        agent,
        headers: { 'content-type': 'application/merge-patch+json', 'content-length': body.length },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(performance.now() - t0)
            : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** CLIENTS loops, each sending its share of requests one after another. */
async function load(port: number): Promise<{ lat: number[]; wallMs: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (;;) {
        const n = next++;
        if (n >= REQUESTS) return;
        lat.push(await patch(agent, port, (n % STREAMS) + 1, n));
      }
    }),
  );
  const wallMs = performance.now() - t0;
  agent.destroy();
  return { lat, wallMs };
}

const BREAKDOWN_ROUNDS = 20;

/** Mean ms of the steps of one edit that are not I/O: validate + defaults, plan. */
function breakdown(text: string): Record<string, number> {
  const loaded = loadConfigText(text);
  const actual = new Map(loaded.desired.resources);
  const mean = (fn: () => unknown) => {
    const t0 = performance.now();
    for (let i = 0; i < BREAKDOWN_ROUNDS; i++) fn();
    return (performance.now() - t0) / BREAKDOWN_ROUNDS;
  };
  return {
    'load+validate': mean(() => loadConfigText(text)),
    plan: mean(() => plan(loaded.desired, actual, fieldRules)),
    format: mean(() => formatConfig(JSON.parse(text))),
  };
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function summary(name: string, r: { lat: number[]; wallMs: number }) {
  const s = [...r.lat].sort((a, b) => a - b);
  return { name, p50: pct(s, 50), p99: pct(s, 99), rps: (r.lat.length / r.wallMs) * 1000 };
}

async function main() {
  benchHeader('api-patch');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-bench-api-'));
  try {
    const text = formatConfig(configDoc(STREAMS));

    // sluice: the real app, service and planner behind a real socket.
    const file = path.join(dir, 'config.json');
    await writeFile(file, text);
    const sink = new PlanningSink();
    const service = new ConfigServiceImpl({
      loop: sink,
      persister: new FilePersister(file),
      log: silentLogger,
      source: file,
      info: () => ({}),
    });
    await service.refresh(async () => ({ text, origin: 'file' }));
    const app = await buildApp({
      config: service,
      loop: { plan: (d) => sink.plan(d), status: () => ({}), instances: () => [] },
      users: new UserTable(),
      ottRouter: new OttRouter(),
      log: silentLogger,
      clock: systemClock,
      services: new Services(),
      planFor: (d) => sink.plan(loadConfigText(formatConfig(d)).desired),
    });
    await app.ready();
    const server = createServer((req, res) => app.routing(req, res));
    const ours = summary('sluice PATCH /config/stream/{id}', await load(await listen(server)));
    server.closeAllConnections();
    server.close();
    await app.close();
    const persisted = JSON.parse(await readFile(file, 'utf8')) as { stream: unknown[] };
    if (persisted.stream.length !== STREAMS) throw new Error('sluice lost streams');

    // Peer: bare node:http, same requests, one serialised fsync'd write of the same size each.
    const peerFile = path.join(dir, 'peer.json');
    const queue = new SerialQueue();
    const peer = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        void queue
          .run(() => atomicWrite(peerFile, text))
          .then(() => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end('{"etag":"x"}');
          });
      });
    });
    const theirs = summary('peer: node:http + atomic fsync write', await load(await listen(peer)));
    peer.closeAllConnections();
    peer.close();

    // Where one edit's time goes, measured alone (no concurrency) on the same document.
    const steps = breakdown(text);
    const bytes = Buffer.byteLength(text);
    console.log(
      `${STREAMS} streams (${(bytes / 1024).toFixed(1)} KiB file), ${REQUESTS} PATCHes, ` +
        `${CLIENTS} concurrent clients, ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(1)}`,
    );
    console.log('| contender | p50 ms | p99 ms | req/s |');
    console.log('|---|---|---|---|');
    for (const r of [ours, theirs]) {
      console.log(
        `| ${r.name} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.rps.toFixed(0)} |`,
      );
    }
    console.log(
      `ratio sluice/peer: p50 ${(ours.p50 / theirs.p50).toFixed(2)}×, ` +
        `p99 ${(ours.p99 / theirs.p99).toFixed(2)}×, throughput ${(ours.rps / theirs.rps).toFixed(2)}×`,
    );
    console.log(
      `one edit, alone: ${Object.entries(steps)
        .map(([k, v]) => `${k} ${v.toFixed(1)} ms`)
        .join(', ')}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
