// An input whose origin refuses the connection says which URL refused and what to check — it
// said `origin refused the connection` (hls), `connect ECONNREFUSED 127.0.0.1:p` (tcp) or
// `127.0.0.1:p: connect ECONNREFUSED …` (rtsp), naming nothing the operator wrote.
import t from 'tap';
import { freePort, startServer, waitFor } from '../helpers/server.ts';

const TIMEOUT_MS = 20_000;
const closed = await freePort();
const cases: { name: string; input: Record<string, unknown>; names: string }[] = [
  {
    name: 'hls',
    input: { type: 'hls', uri: `http://127.0.0.1:${closed}/live/index.m3u8` },
    names: `http://127.0.0.1:${closed}/live/index.m3u8`,
  },
  {
    name: 'rtmp',
    input: { type: 'rtmp', url: `rtmp://127.0.0.1:${closed}/live/cam` },
    names: `rtmp://127.0.0.1:${closed}/live`,
  },
  {
    name: 'rtsp',
    input: { type: 'rtsp', uri: `rtsp://127.0.0.1:${closed}/cam` },
    names: `rtsp://127.0.0.1:${closed}`,
  },
  {
    name: 'tcp',
    input: { type: 'tcp', address: '127.0.0.1', port: closed },
    names: `tcp://127.0.0.1:${closed}`,
  },
];
const srv = await startServer(t, {
  config: {
    stream: cases.map((c, i) => ({
      id: i + 1,
      'stream-name': c.name,
      pause: false,
      input: [c.input],
    })),
  },
});

for (const [i, c] of cases.entries()) {
  t.test(`${c.name}: the message names ${c.names}`, async (t) => {
    const msg = await waitFor(
      `${c.name} input's message`,
      async () => {
        const s = (await (await fetch(`${srv.url}/data/stream/${i + 1}`)).json()) as {
          inputs: { message?: string }[];
        };
        const m = s.inputs[0]?.message ?? '';
        return /refused/.test(m) ? m : undefined;
      },
      TIMEOUT_MS,
    );
    t.ok(msg.includes(c.names), msg);
    t.match(msg, /refused the connection: is the origin running/, 'and what to check');
  });
}
