// A RIST sender with another passphrase: the input's message says the passphrases differ and
// keeps saying so. librist names the key only when a sender's new NONCE arrives and logs
// `Listening peer N timed out` and malformed packets in between — the message was those.
// ristsender (rist-tools, the reference implementation) sends the fixture, main profile, AES-128.
import t from 'tap';
import { freePort, startServer, tempDir, waitFor } from '../../helpers/server.ts';
import { makeFixture, peer, playFixture } from '../../helpers/stream-host.ts';

const dir = await tempDir(t, 'sluice-rist-key-');
const fixture = makeFixture(dir);
const port = await freePort();
const srv = await startServer(t, {
  config: {
    stream: [
      {
        id: 1,
        'stream-name': 'rist-key',
        pause: false,
        input: [
          {
            type: 'rist',
            'rist-addr-port': [port],
            'rist-addr-intf': ['127.0.0.1'],
            passphrase: 'the right secret',
          },
        ],
      },
    ],
  },
});
const udp = await freePort();
peer(t, 'ristsender', [
  ...['-v', '3', '-i', `udp://@127.0.0.1:${udp}`, '-p', '1'],
  ...['-s', 'another secret', '-e', '128', '-o', `rist://127.0.0.1:${port}`],
]);
playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${udp}?pkt_size=1316`);

interface Input {
  message?: string;
  transport?: { lastLog?: string };
}
const input = async () =>
  ((await (await fetch(`${srv.url}/data/stream/1`)).json()) as { inputs: Input[] }).inputs[0]!;

t.test(
  'the message names the passphrase, and still does while librist logs other things',
  async (t) => {
    const first = await waitFor(
      'the key mismatch reported',
      async () => {
        const m = (await input()).message ?? '';
        return /passphrase/.test(m) ? m : undefined;
      },
      20_000,
    );
    t.match(first, /passphrase does not match this input's passphrase/, first);
    t.match(first, `127.0.0.1:${port}`, 'names where it listens');
    // Read until librist's last line has been something else (a peer timing out, a malformed
    // packet) at one read at least, 20 reads at most: every message must still be the passphrase.
    const others: string[] = [];
    const wrong: string[] = [];
    for (let n = 0; n < 20 && (n < 8 || others.length === 0); n++) {
      const i = await input();
      const log = i.transport?.lastLog ?? '';
      if (log && !/nonce|decrypt/i.test(log)) others.push(log);
      if (!/passphrase does not match/.test(i.message ?? '')) wrong.push(i.message ?? '');
      await new Promise((r) => setTimeout(r, 500));
    }
    // Whether librist logs something else within the reads depends on its timers: say what it
    // logged, and hold the message to the passphrase either way.
    t.comment(`librist's other lines meanwhile: ${[...new Set(others)].join(' / ') || 'none'}`);
    t.same(wrong, [], 'every read named the passphrase');
  },
);
