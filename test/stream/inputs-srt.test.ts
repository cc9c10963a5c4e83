// `srt` input with real peers on loopback: ffmpeg and srt-live-transmit as callers into a sluice
// listener and as listeners sluice dials, AES-128 and AES-256, the stream's HTTP-TS output read
// by ffprobe (H.264 + AAC, source PIDs); a wrong passphrase and a wrong stream id are refused
// and the input's message says which.
import t, { type Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import {
  ffprobe,
  freePort,
  httpFor,
  makeFixture,
  makeHost,
  peer,
  playFixture,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir);
const host = makeHost(dir);
const driver = new StreamDriver();
const base = await httpFor(t, host.router);

type Status = Record<string, unknown>;

async function stream(name: string, input: Record<string, unknown>): Promise<StreamInstance> {
  const inst = (await driver.create(
    streamResource({ 'stream-name': name, input: [{ type: 'srt', ...input }] }),
    host,
  )) as StreamInstance;
  t.teardown(() => inst.close());
  return inst;
}

function inputOf(s: StreamInstance): Status {
  return (s.status()['inputs'] as Status[])[0]!;
}

function transportOf(s: StreamInstance): Status {
  return inputOf(s)['transport'] as Status;
}

async function expectSource(t: Test, name: string): Promise<void> {
  const streams = await ffprobe(`${base}/${name}/mpegts`);
  const v = streams.find((s) => s.codec_type === 'video');
  const a = streams.find((s) => s.codec_type === 'audio');
  t.equal(v?.codec_name, 'h264', 'H.264 video');
  t.equal(a?.codec_name, 'aac', 'AAC audio');
  t.equal(v?.id, '0x100', 'video keeps source PID');
  t.equal(a?.id, '0x101', 'audio keeps source PID');
}

/** ffmpeg looping the fixture in real time into an SRT URL, with extra output options. */
function ffmpegSrt(t: Test, url: string, extra: string[] = []): void {
  peer(t, 'ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-re',
    '-stream_loop',
    '-1',
    '-i',
    fixture,
    '-map',
    '0',
    '-c',
    'copy',
    ...extra,
    '-f',
    'mpegts',
    url,
  ]);
}

/** srt-live-transmit relaying the fixture (played by ffmpeg to a UDP port) to `srtUrl`. */
async function sltRelay(t: Test, srtUrl: string): Promise<void> {
  const udp = await freePort();
  peer(t, 'srt-live-transmit', ['-q', `udp://127.0.0.1:${udp}`, srtUrl]);
  playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${udp}?pkt_size=1316`);
}

t.test('listener: ffmpeg caller, AES-128, stream id by login', async (t) => {
  const port = await freePort();
  const s = await stream('srt-l-ff', {
    'listen-mode': true,
    address: '127.0.0.1',
    port,
    'srt-client-login': 'cam1',
    'srt-client-latency-ms': 200,
    passphrase: 'sluice-secret-128',
    'aes-type': 0,
  });
  ffmpegSrt(
    t,
    `srt://127.0.0.1:${port}?mode=caller&latency=200000&pkt_size=1316&passphrase=sluice-secret-128&pbkeylen=16`,
    ['-srt_streamid', '#!::u=cam1,s=pw'],
  );
  await waitFor(() => s.state() === 'running', 15_000, 'stream running');
  await expectSource(t, 'srt-l-ff');
  const tr = transportOf(s);
  t.equal(tr['mode'], 'listener');
  t.equal(tr['connected'], true);
  t.equal(tr['streamId'], '#!::u=cam1,s=pw');
  const srt = tr['srt'] as Status;
  t.equal(srt['latencyMs'], 200, 'negotiated latency in the stats');
  t.type(srt['rttMs'], 'number', 'RTT in the stats');
  t.ok(Number(srt['packetsReceived']) > 0, 'packets received');
  t.equal(srt['packetsUndecrypted'], 0, 'every packet decrypted');
});

t.test('listener: srt-live-transmit caller, AES-256', async (t) => {
  const port = await freePort();
  const s = await stream('srt-l-slt', {
    'listen-mode': true,
    port,
    passphrase: 'sluice-secret-256',
    'aes-type': 2,
  });
  await sltRelay(t, `srt://127.0.0.1:${port}?passphrase=sluice-secret-256&pbkeylen=32`);
  await waitFor(() => s.state() === 'running', 15_000, 'stream running');
  await expectSource(t, 'srt-l-slt');
});

t.test('caller: dials srt-live-transmit (AES-256) and ffmpeg listeners', async (t) => {
  const port = await freePort();
  await sltRelay(t, `srt://:${port}?mode=listener&passphrase=sluice-secret-256&pbkeylen=32`);
  const s = await stream('srt-c-slt', {
    address: '127.0.0.1',
    port,
    passphrase: 'sluice-secret-256',
    'aes-type': 2,
    'srt-client-timeout-ms': 1000,
  });
  await waitFor(() => s.state() === 'running', 20_000, 'stream running');
  await expectSource(t, 'srt-c-slt');
  t.equal(transportOf(s)['peer'], `127.0.0.1:${port}`);

  const port2 = await freePort();
  ffmpegSrt(t, `srt://127.0.0.1:${port2}?mode=listener&latency=120000&pkt_size=1316`);
  const f = await stream('srt-c-ff', {
    address: '127.0.0.1',
    port: port2,
    'srt-client-timeout-ms': 1000,
  });
  await waitFor(() => f.state() === 'running', 20_000, 'stream running');
  await expectSource(t, 'srt-c-ff');
});

t.test('a wrong passphrase is refused and reported (caller and listener)', async (t) => {
  const port = await freePort();
  await sltRelay(t, `srt://:${port}?mode=listener&passphrase=the-right-secret`);
  const s = await stream('srt-badpass-c', {
    address: '127.0.0.1',
    port,
    passphrase: 'the-wrong-secret',
    'srt-client-timeout-ms': 1000,
  });
  await waitFor(
    () => /BADSECRET/.test(String(inputOf(s)['message'] ?? '')),
    20_000,
    'BADSECRET as the input message',
  );
  t.match(inputOf(s)['message'], /wrong passphrase/);
  t.not(s.state(), 'running');

  const port2 = await freePort();
  const l = await stream('srt-badpass-l', {
    'listen-mode': true,
    port: port2,
    passphrase: 'the-right-secret',
  });
  await sltRelay(t, `srt://127.0.0.1:${port2}?passphrase=the-wrong-secret`);
  await waitFor(
    () => /BADSECRET/.test(String(inputOf(l)['message'] ?? '')),
    20_000,
    'BADSECRET as the listener input message',
  );
  t.match(transportOf(l)['lastRejection'], /caller 127\.0\.0\.1 refused: wrong passphrase/);
});

t.test('a wrong stream id is refused and reported (listener and caller)', async (t) => {
  const port = await freePort();
  const l = await stream('srt-badsid-l', {
    'listen-mode': true,
    port,
    'srt-client-login': 'cam1',
  });
  await sltRelay(t, `srt://127.0.0.1:${port}?streamid=cam2`);
  await waitFor(
    () => /stream id/.test(String(inputOf(l)['message'] ?? '')),
    20_000,
    'stream id refused as the input message',
  );
  t.match(inputOf(l)['message'], /stream id "cam2" is not the expected one/);
  t.equal((transportOf(l)['srt'] as Status)['accepted'], 0);

  // sluice dialling a sluice listener that expects another login: the caller sees the reason.
  const c = await stream('srt-badsid-c', {
    address: '127.0.0.1',
    port,
    'srt-client-login': 'cam9',
    'srt-client-timeout-ms': 1000,
  });
  await waitFor(
    () => /stream id refused/.test(String(inputOf(c)['message'] ?? '')),
    20_000,
    'the caller reports the refusal',
  );
  t.match(inputOf(c)['message'], /1401/);
});
