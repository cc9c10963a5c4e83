// Bench helper (its own process, run by bench/ott-delivery.ts): CLIENTS concurrent HLS clients
// against one live media playlist for SECONDS. Each client keeps its own keep-alive
// connection, reloads the playlist every half target duration, fetches every new segment
// once, and counts errors; latency is request to last byte. Prints a Markdown table.
// No peer: this is the load of the 1,000-client step; the check is 0 errors and no client a
// segment behind (the longest wait for a new segment against the target duration).
// Run: CLIENTS=1000 SECONDS=20 npx tsx bench/ott-clients.ts http://127.0.0.1:P/name/index.m3u8
import http from 'node:http';

const URL_ARG = process.argv[2]!;
const CLIENTS = Number(process.env.CLIENTS ?? 1000);
const SECONDS = Number(process.env.SECONDS ?? 20);
/** A request slower than this counts as an error (a player would time out). */
const REQUEST_TIMEOUT_MS = 10_000;
/** Clients join over this long, as viewers do, not in one burst. */
const RAMP_MS = 2_000;

interface Figures {
  playlistMs: number[];
  segmentMs: number[];
  errors: number;
  bytes: number;
  /** Longest time a client went without a new segment after its first one. */
  worstGapMs: number;
}

const fig: Figures = { playlistMs: [], segmentMs: [], errors: 0, bytes: 0, worstGapMs: 0 };

function get(agent: http.Agent, url: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

async function client(deadline: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const seen = new Set<string>();
  let lastNew = 0;
  try {
    while (Date.now() < deadline) {
      let t0 = performance.now();
      let target = 4;
      try {
        const pl = await get(agent, URL_ARG);
        fig.playlistMs.push(performance.now() - t0);
        if (pl.status !== 200) throw new Error(`playlist ${pl.status}`);
        const text = pl.body.toString();
        target = Number(/#EXT-X-TARGETDURATION:(\d+)/.exec(text)?.[1] ?? 4);
        const uris = text.split('\n').filter((l) => l && !l.startsWith('#'));
        // Start at the live edge (the last segment), as players do, then follow.
        const fresh = seen.size === 0 ? uris.slice(-1) : uris.filter((u) => !seen.has(u));
        for (const u of fresh) {
          seen.add(u);
          t0 = performance.now();
          const seg = await get(agent, new URL(u, URL_ARG).toString());
          fig.segmentMs.push(performance.now() - t0);
          if (seg.status !== 200) throw new Error(`segment ${seg.status}`);
          fig.bytes += seg.body.length;
          const now = Date.now();
          if (lastNew) fig.worstGapMs = Math.max(fig.worstGapMs, now - lastNew);
          lastNew = now;
        }
      } catch {
        fig.errors++;
      }
      await new Promise((r) => setTimeout(r, (target * 1000) / 2));
    }
  } finally {
    agent.destroy();
  }
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}

async function main(): Promise<void> {
  const start = Date.now();
  const deadline = start + SECONDS * 1000;
  const all: Promise<void>[] = [];
  for (let i = 0; i < CLIENTS; i++) {
    await new Promise((r) => setTimeout(r, RAMP_MS / CLIENTS));
    all.push(client(deadline));
  }
  await Promise.all(all);
  const secs = (Date.now() - start) / 1000;
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  console.log(`| ${CLIENTS} HLS clients, ${SECONDS} s | count | p50 | p99 | max |`);
  console.log('|---|---|---|---|---|');
  for (const [name, xs] of [
    ['playlist requests', fig.playlistMs],
    ['segment requests', fig.segmentMs],
  ] as const) {
    console.log(
      `| ${name} | ${xs.length} | ${ms(pct(xs, 50))} | ${ms(pct(xs, 99))} | ${ms(Math.max(...xs))} |`,
    );
  }
  console.log(
    `errors ${fig.errors}; ${(fig.bytes / 1048576 / secs).toFixed(0)} MB/s delivered; longest wait for a new segment by one client ${(fig.worstGapMs / 1000).toFixed(1)} s`,
  );
}

await main();
