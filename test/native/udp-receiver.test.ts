// UdpReceiver with ffmpeg as the sender: unicast on 127.0.0.1 and multicast on the loopback
// interface, batches analysed as TS, buffer size reported, close leaves no socket behind.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { NativeError } from '../../src/native/errors.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import { UdpReceiver } from '../../src/native/udp.ts';
import { makeLavfiTs } from '../helpers/ffmpeg.ts';
import { waitFor } from '../helpers/stream-host.ts';

const WAIT_MS = 20_000;
const QUIET_MS = 300;

const dir = mkdtempSync(join(tmpdir(), 'sluice-udp-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'src.ts');
makeLavfiTs(file, { size: '320x240', seconds: 2 });

function socketInodes(): Set<string> {
  const out = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const l = readlinkSync(`/proc/self/fd/${fd}`);
      if (l.startsWith('socket:')) out.add(l);
    } catch {
      // the fd closed while we looked
    }
  }
  return out;
}

function send(url: string, realtime = true): ChildProcess {
  const args = ['-hide_banner', '-loglevel', 'error', ...(realtime ? ['-re'] : []), '-i', file];
  const ff = spawn('ffmpeg', [...args, '-c', 'copy', '-f', 'mpegts', url], { stdio: 'ignore' });
  t.teardown(() => {
    if (ff.exitCode === null) ff.kill('SIGKILL');
  });
  return ff;
}

/** Receive until ffmpeg has exited and no datagram came for QUIET_MS. */
async function receive(opts: { address?: string; bindIf?: string; url: (port: number) => string }) {
  const analyzer = new TsAnalyzer();
  let lastAt = Date.now();
  let sizesOk = true;
  const r = new UdpReceiver({
    port: 0,
    ...(opts.address ? { address: opts.address } : {}),
    ...(opts.bindIf ? { bindIf: opts.bindIf } : {}),
    onData: (batch, datagrams, lengths) => {
      lastAt = Date.now();
      let sum = 0;
      for (let i = 0; i < datagrams; i++) sum += lengths[i]!;
      if (sum !== batch.length || lengths.length !== datagrams) sizesOk = false;
      analyzer.push(batch);
    },
  });
  const ff = send(opts.url(r.port));
  const exited = new Promise<void>((res) => ff.once('exit', () => res()));
  await new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error('timed out')), WAIT_MS);
    void exited.then(() => {
      const iv = setInterval(() => {
        if (Date.now() - lastAt >= QUIET_MS) {
          clearInterval(iv);
          clearTimeout(deadline);
          resolve();
        }
      }, 50);
    });
  });
  return { r, analyzer, sizesOk };
}

t.test('unicast 127.0.0.1: ffmpeg → receiver → analyzer', async (t) => {
  const before = socketInodes();
  const { r, analyzer, sizesOk } = await receive({
    address: '127.0.0.1',
    url: (port) => `udp://127.0.0.1:${port}?pkt_size=1316`,
  });
  const st = r.stats();
  t.ok(st.datagrams > 100, `${st.datagrams} datagrams`);
  t.ok(sizesOk, 'lengths add up to each batch');
  t.ok(st.batches < st.datagrams, 'datagrams arrive in batches');
  t.equal(st.drops, 0);
  t.equal(st.queueDrops, 0);
  t.equal(analyzer.stats().bytes, st.bytes);
  t.equal(analyzer.stats().tr101290.continuityCountError, 0);
  t.same(
    analyzer.programs()[0]?.streams.map((s) => s.codec),
    ['h264', 'aac'],
  );
  t.ok(r.grantedBufferSize > 0, `granted ${r.grantedBufferSize} bytes`);
  t.ok(socketInodes().size > before.size, 'the socket is open');
  r.close();
  r.close(); // idempotent
  t.same(socketInodes(), before, 'close leaves no socket');
  t.throws(() => r.rejoin(), { code: 'ERR_NATIVE_CLOSED' });
  t.equal(r.stats().datagrams, st.datagrams, 'stats survive close');
});

t.test('multicast 239.255.42.1 joined on the loopback interface by name, rejoin', async (t) => {
  const { r, analyzer } = await receive({
    address: '239.255.42.1',
    bindIf: 'lo',
    url: (port) => `udp://239.255.42.1:${port}?pkt_size=1316&localaddr=127.0.0.1&ttl=1`,
  });
  t.ok(r.stats().datagrams > 100);
  t.equal(analyzer.stats().tr101290.continuityCountError, 0);
  t.doesNotThrow(() => r.rejoin());
  r.close();
});

t.test('receive buffer: requested size and granted size', async (t) => {
  const r = new UdpReceiver({ port: 0, bufferSize: 4 * 1024 * 1024, onData: () => {} });
  // As root SO_RCVBUFFORCE grants exactly what was asked; otherwise rmem_max caps it.
  if (process.getuid?.() === 0) t.equal(r.grantedBufferSize, 4 * 1024 * 1024);
  else t.ok(r.grantedBufferSize > 0);
  t.equal(r.requestedBufferSize, 4 * 1024 * 1024);
  r.close();
});

t.test('errors carry a code', async (t) => {
  t.throws(() => new UdpReceiver({ port: 0, address: '192.0.2.1', onData: () => {} }), {
    code: 'EADDRNOTAVAIL',
    syscall: 'bind',
  });
  t.throws(() => new UdpReceiver({ port: 70000, onData: () => {} }), { code: 'ERR_NATIVE_ARG' });
  const taken = new UdpReceiver({ port: 0, address: '127.0.0.1', onData: () => {} });
  t.throws(() => new UdpReceiver({ port: taken.port, address: '127.0.0.1', onData: () => {} }), {
    code: 'EADDRINUSE',
  });
  taken.close();
  t.throws(() => new UdpReceiver({ port: 1, address: '::1', onData: () => {} }), NativeError);
  t.throws(
    () => new UdpReceiver({ port: 1, address: '127.0.0.1', ssm: '127.0.0.2', onData: () => {} }),
    { code: 'ERR_NATIVE_ARG' },
  );
  t.throws(() => new UdpReceiver({ port: 1, bindIf: 'nosuchif0', onData: () => {} }), {
    code: 'ENODEV',
  });
  t.throws(() => new UdpReceiver({ port: 1 } as never), { code: 'ERR_NATIVE_ARG' });
});

t.test('an exception thrown by onData goes to onError; the receiver keeps running', async (t) => {
  const { createSocket } = await import('node:dgram');
  const errors: Error[] = [];
  let calls = 0;
  const got = new Promise<void>((resolve) => {
    const r = new UdpReceiver({
      port: 0,
      address: '127.0.0.1',
      batchLatencyMs: 0,
      onData: () => {
        calls++;
        if (calls === 1) throw new Error('boom');
        r.close();
        resolve();
      },
      onError: (e) => errors.push(e),
    });
    const s = createSocket('udp4');
    t.teardown(() => s.close());
    const tick = setInterval(() => s.send(Buffer.alloc(188, 0x47), r.port, '127.0.0.1'), 20);
    t.teardown(() => clearInterval(tick));
  });
  await Promise.race([
    got,
    new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 5000)),
  ]);
  t.equal(errors[0]?.message, 'boom');
  t.ok(calls >= 2);
});

t.test('SSM: a source-specific join receives its source only', async (t) => {
  let right = 0;
  let wrong = 0;
  const port = await new Promise<number>((resolve) => {
    const probe = new UdpReceiver({ port: 0, onData: () => {} });
    const p = probe.port;
    probe.close();
    resolve(p);
  });
  const group = '232.1.2.3';
  const a = new UdpReceiver({
    port,
    address: group,
    bindIf: '127.0.0.1',
    ssm: '127.0.0.1',
    onData: (_b, n) => {
      right += n;
    },
  });
  const b = new UdpReceiver({
    port,
    address: group,
    bindIf: '127.0.0.1',
    ssm: '127.0.0.2',
    onData: (_b, n) => {
      wrong += n;
    },
  });
  t.teardown(() => {
    a.close();
    b.close();
  });
  const ff = send(`udp://${group}:${port}?pkt_size=1316&localaddr=127.0.0.1&ttl=1`);
  await new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error('timed out')), WAIT_MS);
    const iv = setInterval(() => {
      if (right >= 50) {
        clearInterval(iv);
        clearTimeout(deadline);
        resolve();
      }
    }, 20);
  });
  ff.kill('SIGKILL');
  t.ok(right >= 50, `${right} datagrams from the joined source`);
  t.equal(wrong, 0, 'none for the other source');
});

t.test(
  'a JS thread that falls behind loses whole batches (queueDrops), never blocks the reader',
  async (t) => {
    const BLOCK_MS = 500;
    let blocked = false;
    let datagrams = 0;
    const r = new UdpReceiver({
      port: 0,
      address: '127.0.0.1',
      queueBatches: 1,
      batchDatagrams: 4,
      batchLatencyMs: 0,
      onData: (_b, n) => {
        datagrams += n;
        if (blocked) return;
        blocked = true;
        const until = Date.now() + BLOCK_MS;
        while (Date.now() < until) {
          // hold the JS thread while ffmpeg sends as fast as it can
        }
      },
    });
    t.teardown(() => r.close());
    const ff = send(`udp://127.0.0.1:${r.port}?pkt_size=1316`, false);
    await new Promise<void>((resolve) => ff.once('exit', () => resolve()));
    const st = r.stats();
    t.ok(st.queueDrops > 0, `${st.queueDrops} batches dropped while JS was busy`);
    t.equal(st.drops, 0, 'the socket itself lost nothing: the thread kept reading');
    t.ok(st.datagrams > datagrams, 'the thread counted more than JS was handed');
  },
);

t.test(
  'socket-buffer loss is counted: every datagram sent is received or a kernel drop',
  async (t) => {
    // A buffer of about one datagram and a burst far faster than the hub's 2 ms rounds: the
    // kernel drops most of it, and stats().drops (SO_MEMINFO) must account for each one.
    const SENT = 4000;
    let received = 0;
    const r = new UdpReceiver({
      port: 0,
      address: '127.0.0.1',
      bufferSize: 2048,
      onData: (_batch, datagrams) => {
        received += datagrams;
      },
    });
    t.teardown(() => r.close());
    const { createSocket } = await import('node:dgram');
    const tx = createSocket('udp4');
    t.teardown(() => tx.close());
    const payload = Buffer.alloc(1316, 0x47);
    let acked = 0;
    await new Promise<void>((resolve, reject) => {
      for (let i = 0; i < SENT; i++) {
        tx.send(payload, r.port, '127.0.0.1', (err) => {
          if (err) reject(err);
          else if (++acked === SENT) resolve();
        });
      }
    });
    // No event tells of drops: stats() is asked until every datagram is accounted for (on a
    // time-out the assertions below say what was missing).
    await waitFor(() => received + r.stats().drops >= SENT, WAIT_MS, 'every datagram').catch(
      () => {},
    );
    const { drops } = r.stats();
    t.ok(drops > 0, `${drops} kernel drops`);
    t.equal(received + drops, SENT, `${received} received + ${drops} dropped = ${SENT} sent`);
    r.close();
    t.equal(r.stats().drops, drops, 'the last reading stays after close');
  },
);
