// An HLS origin that answers every segment far over the cap — 40 MiB announced, or a chunked
// body that never stops growing — again and again, pulled by the real server with preloads: the
// memory the input holds for bodies stays within its limit (its status, and the server's RSS
// with room to spare), each refusal is reported in words, and nothing is kept once refused.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { BODY_MEMORY_BYTES, MAX_SEGMENT_BYTES } from '../../../src/inputs/hls/input.ts';
import { startServer, waitFor } from '../../helpers/server.ts';

const MiB = 1024 * 1024;
/** Over-cap segments served in all (then 404): bounds the bytes the test moves. */
const HOSTILE_SEGMENTS = 12;
const CHUNK = Buffer.alloc(MiB, 0x47);
/** What the origin announces, and how far it lets an unannounced body grow. */
const ANNOUNCED = MAX_SEGMENT_BYTES + 8 * MiB;
const GROWN = MAX_SEGMENT_BYTES + 16 * MiB;

/** Resident memory of a process, from /proc. */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

t.test('segments over the cap, again and again: bounded, released, reported', async (t) => {
  let served = 0;
  let seq = 0;
  const origin = http.createServer((req, res) => {
    if (req.url === '/live.m3u8') {
      seq++;
      let pl = `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:${seq}\n`;
      for (let i = 0; i < 6; i++) pl += `#EXTINF:1,\ns${seq + i}.ts\n`;
      return void res.end(pl);
    }
    if (served >= HOSTILE_SEGMENTS) return void res.writeHead(404).end();
    served++;
    const n = Number(/\d+/.exec(req.url ?? '')?.[0] ?? 0);
    if (n % 2 === 0) {
      // Over the cap announced: refused from the head alone.
      res.writeHead(200, { 'Content-Length': ANNOUNCED });
      res.write(CHUNK.subarray(0, 188));
      return;
    }
    // No length announced: 1 MiB pieces until the client gives up (or GROWN is reached).
    let sent = 0;
    let gone = false;
    res.on('close', () => {
      gone = true;
    });
    const more = () => {
      while (!gone && sent < GROWN / MiB) {
        sent++;
        if (!res.write(CHUNK)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    origin.closeAllConnections();
    return new Promise<void>((r) => origin.close(() => r()));
  });
  const base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;

  const srv = await startServer(t, {
    config: {
      stream: [
        {
          id: 1,
          'stream-name': 'hostile',
          pause: false,
          input: [{ type: 'hls', uri: `${base}/live.m3u8`, preload: 4 }],
        },
      ],
    },
  });
  const baseRss = rssOf(srv.proc.pid!);
  let maxRss = baseRss;
  const errors = new Set<string>();
  type Memory = { held: number; peak: number; limit: number };
  const transport = async () => {
    const s = (await (await fetch(`${srv.url}/data/stream/1`)).json()) as {
      inputs: { message?: string; transport: Record<string, unknown> }[];
    };
    maxRss = Math.max(maxRss, rssOf(srv.proc.pid!));
    const tr = s.inputs[0]!.transport;
    if (tr['lastError']) errors.add(String(tr['lastError']));
    return tr;
  };
  const done = await waitFor(
    'every hostile segment refused',
    async () => {
      const tr = await transport();
      return Number(tr['oversize']) >= HOSTILE_SEGMENTS && Number(tr['notFound']) > 0
        ? tr
        : undefined;
    },
    60_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${srv.output()}`);
  });
  const mem = (done['memory'] ?? {}) as Partial<Memory>;
  t.equal(mem.limit, BODY_MEMORY_BYTES, `the input's body memory limit (${mem.limit} bytes)`);
  t.ok(
    Number(mem.peak) > MAX_SEGMENT_BYTES / 2,
    `bodies did grow toward the cap (peak ${mem.peak})`,
  );
  t.ok(Number(mem.peak) <= BODY_MEMORY_BYTES, `never more than the limit held (peak ${mem.peak})`);
  t.equal(mem.held, 0, 'nothing kept once every body was refused');
  const words = [...errors].join('\n');
  const seg = `segment \\d+ from ${base.replaceAll('.', '\\.')}/s\\d+\\.ts`;
  const cap = `${MAX_SEGMENT_BYTES / MiB} MiB cap`;
  t.match(
    words,
    new RegExp(`${seg} is ${ANNOUNCED / MiB} MiB, over the ${cap}; skipped`),
    'an announced length over the cap, in words',
  );
  t.match(
    words,
    new RegExp(`${seg} grew past the ${cap} \\(no length announced\\); skipped`),
    'a body growing past the cap, in words',
  );
  // RSS moves with the collector; the bound is generous (the old code held ~160 MiB a body).
  t.ok(
    maxRss - baseRss < 256 * MiB,
    `server RSS grew by ${Math.round((maxRss - baseRss) / MiB)} MiB at most`,
  );
});
