// /metrics of a real server carries what only /data/stream showed: a UDP input's receive
// counters (a flood during a 300 ms stall of the loop sheds batches, oversize datagrams are
// cut) and the archive's (bytes and chunks written grow, drops, failures, index lag), equal to
// the status figures, linted by promtool, and gone with the stream and storage deleted.
import { execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { statfsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { promtoolCheck } from '../helpers/promtool.ts';
import { recordedBeyond, recordingConfig } from '../helpers/recording.ts';
import { freePort, REPO_ROOT, startServer, tempDir, waitFor } from '../helpers/server.ts';
import { stallNodeOptions } from '../helpers/stall.ts';

/** The flood: unpaced, at most 1 s and 100,000 datagrams of 1316 bytes. */
const FLOOD_SECONDS = 1;
const FLOOD_MAX = 100_000;
const OVERSIZE = 3;
/** Longer than the receiver's largest datagram (4096). */
const OVERSIZE_BYTES = 5000;
/** statfs magic of ext2/3/4, a filesystem that takes O_DIRECT. */
const EXT4 = 0xef53;

async function scrape(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

type Receiver = Record<'datagrams' | 'drops' | 'queueDrops' | 'truncated', number>;

async function receiver(url: string): Promise<Receiver> {
  const s = (await (await fetch(`${url}/data/stream/u`)).json()) as {
    inputs: { transport: { receiver: Receiver } }[];
  };
  return s.inputs[0]!.transport.receiver;
}

t.test('UDP receive counters and archive counters on /metrics', async (t) => {
  const dir = await tempDir(t);
  const store = path.join(dir, 'store');
  await mkdir(store);
  const sender = path.join(dir, 'udp-flood');
  execFileSync('cc', ['-O2', '-o', sender, path.join(REPO_ROOT, 'test/helpers/udp-flood.c')]);
  const port = await freePort();
  const rec = recordingConfig(store);
  const udpStream = {
    id: 2,
    'stream-name': 'u',
    pause: false,
    input: [{ type: 'udp', address: '127.0.0.1', port }],
  };
  const srv = await startServer(t, {
    config: { ...rec, stream: [...(rec['stream'] as object[]), udpStream] },
    env: { NODE_OPTIONS: stallNodeOptions() },
  });
  const series = (name: string) => `${name}{stream="u",input="0"}`;

  // The input must be listening before anything is sent: the server answers HTTP before its
  // first apply has opened the stream's socket (a datagram sent then is lost, not counted).
  await waitFor('the udp input listening', async () => {
    const r = await fetch(`${srv.url}/data/stream/u`);
    if (!r.ok) return undefined;
    const s = (await r.json()) as { inputs?: { transport?: { receiver?: unknown } }[] };
    return s.inputs?.[0]?.transport?.receiver ? true : undefined;
  });
  // Oversize datagrams are cut and counted, one by one.
  const sock = dgram.createSocket('udp4');
  t.teardown(() => sock.close());
  for (let i = 0; i < OVERSIZE; i++) {
    await new Promise<void>((r) =>
      sock.send(Buffer.alloc(OVERSIZE_BYTES, 0x47), port, '127.0.0.1', () => r()),
    );
  }
  await waitFor('the oversize datagrams to be counted', async () =>
    value(await scrape(srv.url), series('sluice_stream_input_udp_truncated_total')) === OVERSIZE
      ? true
      : undefined,
  );

  // A flood while the loop is held: the receive queue fills and sheds whole batches.
  srv.proc.kill('SIGUSR2');
  const flood = spawn(sender, [
    '-',
    '127.0.0.1',
    String(port),
    '0',
    String(FLOOD_SECONDS),
    String(FLOOD_MAX),
  ]);
  t.teardown(() => flood.kill('SIGKILL'));
  await new Promise((r) => flood.once('close', r));
  // Once the flood is over the counters stand still: read the status and the metrics until
  // two readings agree, then they must be equal.
  const settled = await waitFor('the counters to stand still', async () => {
    const a = await receiver(srv.url);
    const text = await scrape(srv.url);
    const b = await receiver(srv.url);
    return JSON.stringify(a) === JSON.stringify(b) ? { st: b, text } : undefined;
  });
  const { st, text } = settled;
  t.ok(st.queueDrops > 0, `the flood shed batches (${st.queueDrops})`);
  t.equal(
    value(text, series('sluice_stream_input_udp_queue_drops_total')),
    st.queueDrops,
    'queue drops as in the status',
  );
  t.equal(
    value(text, series('sluice_stream_input_udp_kernel_drops_total')),
    st.drops,
    'kernel drops as in the status',
  );
  t.equal(
    value(text, series('sluice_stream_input_udp_datagrams_total')),
    st.datagrams,
    'datagrams as in the status',
  );
  t.equal(value(text, series('sluice_stream_input_udp_truncated_total')), OVERSIZE);

  // The archive: bytes and chunks written grow while the stream records.
  await recordedBeyond(srv, 1);
  const arch = (name: string) => `${name}{storage="1",stream="rec"}`;
  const first = await scrape(srv.url);
  const bytes0 = value(first, arch('sluice_dvr_written_bytes_total'))!;
  const chunks0 = value(first, arch('sluice_dvr_written_chunks_total'))!;
  t.ok(bytes0 > 0 && chunks0 > 0, `written: ${chunks0} chunks, ${bytes0} bytes`);
  t.equal(value(first, arch('sluice_dvr_failed_chunks_total')), 0, 'no failed chunk');
  t.type(value(first, arch('sluice_dvr_dropped_chunks_total')), 'number', 'dropped chunks');
  const lag = value(first, arch('sluice_dvr_index_lag_seconds'))!;
  t.ok(lag >= 0 && lag < 30, `index lag ${lag} s`);
  const later = await waitFor(
    'another chunk written',
    async () => {
      const s = await scrape(srv.url);
      return value(s, arch('sluice_dvr_written_chunks_total'))! > chunks0 ? s : undefined;
    },
    30_000,
  );
  t.ok(value(later, arch('sluice_dvr_written_bytes_total'))! > bytes0, 'bytes grow');
  // The chunks come from page-aligned segment blocks: on ext4 their pages skip the page cache.
  const direct = value(later, 'sluice_dvr_writes_total{path="direct"}');
  if (statfsSync(store).type === EXT4) t.ok(direct! > 0, `${direct} writes went direct`);
  else t.type(direct, 'number', 'writes by path');
  const dvr = (
    (await (await fetch(`${srv.url}/data/stream/rec`)).json()) as {
      ott: { dvr: { chunks: number; bytes: number } };
    }
  ).ott.dvr;
  t.ok(
    dvr.chunks >= value(later, arch('sluice_dvr_written_chunks_total'))!,
    'no more than the recorder says',
  );

  const lint = await promtoolCheck(later);
  t.equal(lint.code, 0, `promtool check metrics exits 0:\n${lint.out}`);

  // Deleted: the UDP stream and the storage take their series with them.
  const cfg = JSON.parse(await readFile(srv.configPath!, 'utf8')) as Record<string, unknown>;
  await writeFile(
    srv.configPath!,
    JSON.stringify({ ...cfg, stream: [], 'dvr-storage-list': { storage: [] } }),
  );
  const gone = await waitFor(
    'the series to go',
    async () => {
      const s = await scrape(srv.url);
      return /stream="u"|storage="1"/.test(s) ? undefined : s;
    },
    20_000,
  );
  t.notMatch(gone, /^sluice_stream_input_udp_\w+\{/m, 'no UDP input series left');
  // (sluice_dvr_writes_total{path} counts the whole process's writes: it stays, as a counter must)
  t.notMatch(gone, /^sluice_dvr_\w+\{[^}]*(storage|stream)=/m, 'no archive series left');
});
