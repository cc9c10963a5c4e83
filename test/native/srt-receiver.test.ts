// SrtReceiver: the façade's argument checks (no socket made), then the native receiver against
// real peers on loopback — srt-live-transmit and ffmpeg (libsrt) as callers into a listener and
// as listeners it dials: batches (never one call per message), admission by stream id, one
// caller at a time, faults in words (BADSECRET, stream id refused, timed out), and close()
// freeing the port.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { NativeError } from '../../src/native/errors.ts';
import { type SrtEvent, SrtReceiver, type SrtReceiverOptions } from '../../src/native/srt.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import { makeLavfiTs } from '../helpers/ffmpeg.ts';
import { freePort } from '../helpers/server.ts';

const WAIT_MS = 15_000;
const dir = mkdtempSync(join(tmpdir(), 'sluice-srt-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'src.ts');
makeLavfiTs(file, { size: '320x240', seconds: 3 });

const noop = (): void => {};

function argFails(t: Test, opts: Partial<SrtReceiverOptions>, re: RegExp): void {
  let caught: unknown;
  try {
    new SrtReceiver({
      mode: 'listener',
      port: 0,
      onData: noop,
      ...opts,
    } as SrtReceiverOptions).close();
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof NativeError, `${re.source}: a NativeError`);
  t.equal((caught as NativeError).code, 'ERR_NATIVE_ARG');
  t.match((caught as NativeError).message, re);
}

t.test('argument checks before the addon', async (t) => {
  argFails(t, { mode: 'rendezvous' as 'caller' }, /mode must be/);
  argFails(t, { port: 70000 }, /port must be/);
  argFails(t, { mode: 'caller', port: 9000 }, /caller needs an address/);
  argFails(t, { mode: 'caller', port: 0, address: '127.0.0.1' }, /port must be/);
  argFails(t, { address: 'localhost' }, /address must be an IPv4/);
  argFails(t, { passphrase: 'short' }, /passphrase must be 10 to 79 bytes/);
  argFails(t, { passphrase: 'x'.repeat(80) }, /passphrase must be 10 to 79 bytes/);
  argFails(t, { passphrase: 'long enough', keyLength: 20 as 16 }, /keyLength/);
  argFails(t, { streamId: 'x'.repeat(513) }, /streamId/);
  argFails(t, { overheadPct: 4 }, /overheadPct/);
  argFails(t, { maxBw: -2 }, /maxBw/);
  argFails(t, { latencyMs: 1.5 }, /latencyMs/);
  argFails(t, { tsbpd: 'yes' as unknown as boolean }, /tsbpd/);
  argFails(t, { onEvent: 1 as unknown as () => void }, /onEvent/);
  argFails(t, { bindIf: '' }, /bindIf/);
  argFails(t, { onData: undefined as unknown as () => void }, /onData/);
});

interface Rx {
  rx: SrtReceiver;
  events: SrtEvent[];
  analyzer: TsAnalyzer;
  calls: number;
  messages: number;
}

function open(t: Test, opts: Omit<SrtReceiverOptions, 'onData' | 'onEvent'>): Rx {
  const state: Rx = {
    events: [],
    analyzer: new TsAnalyzer(),
    calls: 0,
    messages: 0,
  } as unknown as Rx;
  state.rx = new SrtReceiver({
    ...opts,
    onData: (batch, n, lengths) => {
      state.calls++;
      state.messages += n;
      let sum = 0;
      for (let i = 0; i < n; i++) sum += lengths[i]!;
      if (sum !== batch.length) throw new Error('lengths do not add up');
      state.analyzer.push(batch);
    },
    onEvent: (e) => state.events.push(e),
  });
  t.teardown(() => state.rx.close());
  return state;
}

function child(t: Test, cmd: string, args: string[]): ChildProcess {
  const p = spawn(cmd, args, { stdio: ['pipe', 'ignore', 'ignore'] });
  t.teardown(() => {
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  });
  return p;
}

/** ffmpeg sending the fixture (real time) to an SRT URL. */
function ffmpegSrt(t: Test, url: string, extra: string[] = []): ChildProcess {
  return child(t, 'ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-re',
    '-stream_loop',
    '-1',
    '-i',
    file,
    '-c',
    'copy',
    ...extra,
    '-f',
    'mpegts',
    url,
  ]);
}

/** srt-live-transmit reading TS from stdin (fed by ffmpeg in real time) into `url`. */
function sltFromStdin(t: Test, url: string): ChildProcess {
  const slt = child(t, 'srt-live-transmit', ['-q', 'file://con', url]);
  const ff = spawn(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-re',
      '-stream_loop',
      '-1',
      '-i',
      file,
      '-c',
      'copy',
      '-f',
      'mpegts',
      'pipe:1',
    ],
    {
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  t.teardown(() => {
    if (ff.exitCode === null) ff.kill('SIGKILL');
  });
  ff.stdout.pipe(slt.stdin!);
  slt.stdin!.on('error', noop);
  return slt;
}

async function until(cond: () => boolean, what: string, ms = WAIT_MS): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function eventOf<T extends SrtEvent['type']>(
  s: Rx,
  type: T,
): Extract<SrtEvent, { type: T }> | undefined {
  return s.events.find((e) => e.type === type) as Extract<SrtEvent, { type: T }> | undefined;
}

t.test('listener: ffmpeg caller with AES-128 and an Access Control stream id', async (t) => {
  const s = open(t, {
    mode: 'listener',
    port: 0,
    address: '127.0.0.1',
    streamId: 'cam1',
    passphrase: 'sluice-secret-1',
    keyLength: 16,
  });
  ffmpegSrt(
    t,
    `srt://127.0.0.1:${s.rx.port}?mode=caller&latency=200000&pkt_size=1316&passphrase=sluice-secret-1&pbkeylen=16`,
    ['-srt_streamid', '#!::u=cam1,s=pw'],
  );
  await until(() => s.analyzer.stats().packets > 500, 'TS packets');
  const c = eventOf(s, 'connected');
  t.equal(c?.streamId, '#!::u=cam1,s=pw', 'the caller stream id is reported');
  t.match(c?.peer, /^127\.0\.0\.1:\d+$/);
  t.ok(s.messages > s.calls * 2, `batched: ${s.messages} messages in ${s.calls} calls`);
  t.equal(s.analyzer.stats().tr101290.continuityCountError, 0, 'no CC error');
  const st = s.rx.stats();
  t.equal(st.connected, true);
  t.equal(st.accepted, 1);
  t.equal(st.latencyMs, 200, 'negotiated latency: the larger of the two ends');
  t.type(st.rttMs, 'number');
  t.ok((st.packetsReceived ?? 0) > 0);
});

t.test(
  'listener: srt-live-transmit caller with AES-256; a second caller is refused (busy)',
  async (t) => {
    const s = open(t, {
      mode: 'listener',
      port: 0,
      passphrase: 'sluice-secret-256',
      keyLength: 32,
    });
    sltFromStdin(t, `srt://127.0.0.1:${s.rx.port}?passphrase=sluice-secret-256&pbkeylen=32`);
    await until(() => s.analyzer.stats().packets > 500, 'TS packets');
    const second = sltFromStdin(
      t,
      `srt://127.0.0.1:${s.rx.port}?passphrase=sluice-secret-256&pbkeylen=32`,
    );
    await until(() => eventOf(s, 'rejected') !== undefined, 'the second caller refused');
    t.match(eventOf(s, 'rejected')?.message, /already has a caller \(1409\)/);
    second.kill('SIGKILL');
    t.equal(s.rx.stats().accepted, 1);
  },
);

t.test('listener: a wrong stream id and a wrong passphrase are refused, in words', async (t) => {
  const s = open(t, { mode: 'listener', port: 0, streamId: 'cam1', passphrase: 'sluice-secret-1' });
  const a = sltFromStdin(
    t,
    `srt://127.0.0.1:${s.rx.port}?streamid=cam2&passphrase=sluice-secret-1`,
  );
  await until(() => eventOf(s, 'rejected') !== undefined, 'stream id refused');
  t.match(eventOf(s, 'rejected')?.message, /stream id "cam2" is not the expected one/);
  a.kill('SIGKILL');
  s.events.length = 0;
  const b = sltFromStdin(t, `srt://127.0.0.1:${s.rx.port}?streamid=cam1&passphrase=another-secret`);
  await until(() => eventOf(s, 'rejected') !== undefined, 'passphrase refused');
  t.match(eventOf(s, 'rejected')?.message, /wrong passphrase \(BADSECRET\)/);
  b.kill('SIGKILL');
  t.equal(s.rx.stats().accepted, 0, 'nobody got in');
  t.ok(s.rx.stats().rejected >= 2);
});

t.test('caller: dials srt-live-transmit and ffmpeg listeners', async (t) => {
  const port = await freePort();
  sltFromStdin(t, `srt://:${port}?mode=listener&passphrase=sluice-secret-256&pbkeylen=32`);
  // The listener may not be up yet: a caller that times out is reopened, as the input does.
  let s: Rx | undefined;
  await until(() => {
    if (s && eventOf(s, 'fault')) {
      s.rx.close();
      s = undefined;
    }
    s ??= open(t, {
      mode: 'caller',
      address: '127.0.0.1',
      port,
      passphrase: 'sluice-secret-256',
      keyLength: 32,
      connectTimeoutMs: 1000,
    });
    return s.analyzer.stats().packets > 500;
  }, 'TS from srt-live-transmit');
  t.equal(s!.rx.stats().connected, true);
  t.equal(eventOf(s!, 'connected')?.peer, `127.0.0.1:${port}`, 'the peer reported');

  const port2 = await freePort();
  ffmpegSrt(t, `srt://127.0.0.1:${port2}?mode=listener&latency=120000&pkt_size=1316`);
  let f: Rx | undefined;
  await until(() => {
    if (f && eventOf(f, 'fault')) {
      f.rx.close();
      f = undefined;
    }
    f ??= open(t, { mode: 'caller', address: '127.0.0.1', port: port2, connectTimeoutMs: 1000 });
    return f.analyzer.stats().packets > 500;
  }, 'TS from ffmpeg');
  t.pass('ffmpeg listener dialled');
});

t.test('caller: wrong passphrase is BADSECRET, nobody there is a time-out', async (t) => {
  const port = await freePort();
  sltFromStdin(t, `srt://:${port}?mode=listener&passphrase=the-right-secret`);
  let s: Rx | undefined;
  await until(() => {
    const f = s && eventOf(s, 'fault');
    if (f?.code === 'BADSECRET') return true;
    if (f) {
      s!.rx.close();
      s = undefined; // the listener was not up yet (timed out): dial again
    }
    s ??= open(t, {
      mode: 'caller',
      address: '127.0.0.1',
      port,
      passphrase: 'the-wrong-secret',
      connectTimeoutMs: 1000,
    });
    return false;
  }, 'BADSECRET');
  t.match(eventOf(s!, 'fault')?.message, /wrong passphrase \(BADSECRET\)/);

  const quiet = await freePort();
  const q = open(t, { mode: 'caller', address: '127.0.0.1', port: quiet, connectTimeoutMs: 300 });
  await until(() => eventOf(q, 'fault') !== undefined, 'time-out');
  t.equal(eventOf(q, 'fault')?.code, 'TIMEOUT');
  t.match(eventOf(q, 'fault')?.message, /timed out/);
});

t.test('close() frees the listening port at once', async (t) => {
  const a = new SrtReceiver({ mode: 'listener', port: 0, onData: noop });
  const port = a.port;
  let busy: unknown;
  try {
    new SrtReceiver({ mode: 'listener', port, onData: noop }).close();
  } catch (err) {
    busy = err;
  }
  t.match(
    (busy as Error | undefined)?.message,
    /srt_listen: .*already listening/,
    'the port is taken',
  );
  a.close();
  a.close(); // idempotent
  const b = new SrtReceiver({ mode: 'listener', port, onData: noop });
  t.equal(b.port, port);
  b.close();
  t.equal(b.closed, true);
  t.equal(b.stats().connected, false);
});
