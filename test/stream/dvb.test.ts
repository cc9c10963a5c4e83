// A `dvb` input end to end through the fake device layer: a real server (LD_PRELOAD) with a
// DVB-T adapter tuned to a frequency that carries an ffmpeg MPTS; the stream bound to it runs and
// its HLS plays (ffprobe); a demuxer with src 1 takes one programme of it; /data/dvb-adapter and /metrics report lock, signal, SNR, BER. The fake
// frontend drops lock → the stream fails over to its backup input, the adapter re-tunes and the
// adapter-lock alert is raised;
// lock back → the stream returns to the dvb input.
import { statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { fakeDvb } from '../helpers/fake-dvb.ts';
import { makeMpts, probePrograms } from '../helpers/mpts.ts';
import { startServer, waitFor } from '../helpers/server.ts';
import { ffprobe, makeFixture } from '../helpers/stream-host.ts';

const MPTS_SECONDS = 10;
const FREQ_KHZ = 602000;

t.test('a stream on a tuner adapter: plays, fails over on lost lock, returns', async (t) => {
  const fake = await fakeDvb(t);
  const mux = path.join(fake.dir, 'mux.ts');
  makeMpts(
    mux,
    [
      { pnr: 101, title: 'One', video: 'libx264', audio: 'aac' },
      { pnr: 102, title: 'Two', video: 'libx264', audio: 'mp2' },
    ],
    MPTS_SECONDS,
    [],
  );
  const bitrate = Math.round((statSync(mux).size * 8) / MPTS_SECONDS);
  fake.setMux([{ system: 3, freq: FREQ_KHZ * 1000, bitrate, file: mux }]);
  fake.setControl({ cnr: 28100, signal: -48000, ber: 0, bits: 1000000, unc: 0 });
  const backup = makeFixture(fake.dir, 10);
  const srv = await startServer(t, {
    env: fake.env({ FAKE_DVB_DELSYS: '3,16' }) as Record<string, string>,
    config: {
      alerter: { 'clear-sec': 0 },
      'dvb-adapter': [
        { id: 1, name: 'terrestrial', type: 3, freq: FREQ_KHZ, adapter: 0, pause: false },
      ],
      stream: [
        {
          id: 1,
          'stream-name': 'dvb',
          pause: false,
          'ott-hls': 1,
          'stream-timeout': 1_000_000,
          'check-interval': 10_000_000,
          input: [
            { type: 'dvb', 'adapter-id': 1 },
            { type: 'file', 'file-path': backup },
          ],
        },
        {
          id: 2,
          'stream-name': 'two',
          pause: false,
          'ott-http': 1,
          input: [{ type: 'demuxer', src: 1, 'mpts-id': 1, pnr: 102 }],
        },
      ],
    },
  });
  const get = async (p: string) =>
    (await fetch(`${srv.url}${p}`)).json() as Promise<Record<string, unknown>>;
  const adapter = () => get('/data/dvb-adapter/1');
  const stream = () => get('/data/stream/1');

  const locked = await waitFor('adapter locked', async () => {
    const a = await adapter();
    return a['state'] === 'locked' ? a : undefined;
  });
  t.match(locked, {
    lock: true,
    signal: -48,
    snr: 28.1,
    ber: 0,
    unc: 0,
    frontend: 'sluice fake frontend',
  });
  await waitFor(
    'stream running on the dvb input',
    async () => {
      const s = await stream();
      return s['state'] === 'running' && s['activeInput'] === 0 ? s : undefined;
    },
    20_000,
  );
  await waitFor(
    'the HLS playlist',
    async () => ((await fetch(`${srv.url}/dvb/index.m3u8`)).status === 200 ? true : undefined),
    20_000,
  );
  const probed = await ffprobe(`${srv.url}/dvb/index.m3u8`, 30_000);
  t.ok(
    probed.some((s) => s.codec_type === 'video'),
    'HLS plays: ffprobe sees video',
  );
  await waitFor('the demuxer stream running', async () => {
    const s = await get('/data/stream/2');
    return s['state'] === 'running' ? s : undefined;
  });
  const programmes = await probePrograms(`${srv.url}/two/mpegts`);
  t.same(
    programmes.map((p) => [p.program_num, p.tags?.service_name]),
    [[102, 'Two']],
    'a demuxer with src 1 takes one programme of the adapter',
  );
  const list = (await (await fetch(`${srv.url}/data/dvb-adapter`)).json()) as unknown[];
  t.equal(list.length, 1);
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  t.match(metrics, /sluice_dvb_lock\{adapter="terrestrial"\} 1/);
  t.match(metrics, /sluice_dvb_snr_db\{adapter="terrestrial"\} 28\.1/);
  const tuned = fake
    .entries()
    .filter((e) => e.op === 'FE_SET_PROPERTY')
    .at(-1);
  t.same(tuned?.props?.[0], [3, FREQ_KHZ * 1000], 'tuned through the fake layer');

  fake.setControl({ lock: 0 });
  await waitFor('adapter reports no lock', async () => {
    const a = await adapter();
    return a['lock'] === false && a['state'] === 'no lock' ? a : undefined;
  });
  await waitFor(
    'stream on its backup input',
    async () => {
      const s = await stream();
      return s['activeInput'] === 1 ? s : undefined;
    },
    15_000,
  );
  await waitFor(
    'the adapter re-tunes',
    async () => {
      const a = await adapter();
      return (a['retunes'] as number) > 0 ? a : undefined;
    },
    10_000,
  );

  fake.setControl({ cnr: 28100, signal: -48000 });
  await waitFor('adapter locked again', async () => {
    const a = await adapter();
    return a['state'] === 'locked' && (a['lockChanges'] as number) >= 2 ? a : undefined;
  });
  await waitFor(
    'stream back on the dvb input',
    async () => {
      const s = await stream();
      return s['activeInput'] === 0 ? s : undefined;
    },
    30_000,
  );
});
