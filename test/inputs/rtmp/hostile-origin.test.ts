// The rtmp pull against scripted hostile origins on loopback: frames that the input would hold
// for a track the origin announces and never configures (bounded in bytes, then let go), the
// largest chunk size and message length the wire can state (refused before any allocation),
// and origins that trickle their handshake or play without ever sending media (the attempt
// ends at client-timeout, the collector forced all along).
import net, { type AddressInfo, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { RtmpInput } from '../../../src/inputs/rtmp/input.ts';
import { decodeAmf0, encodeAmf0 } from '../../../src/protocols/rtmp/amf0.ts';
import {
  ChunkReader,
  ChunkWriter,
  HANDSHAKE_SIZE,
  handshakeEcho,
  handshakeHello,
  MSG_COMMAND_AMF0,
  MSG_DATA_AMF0,
  MSG_VIDEO,
  type RtmpMessage,
  setChunkSize,
  UC_PING_REQUEST,
  userControl,
} from '../../../src/protocols/rtmp/chunk.ts';
import { MAX_HELD_BYTES } from '../../../src/protocols/rtmp/remux.ts';
import { collectUntilSteady } from '../../helpers/gc.ts';
import { collectAlways, collector, inputContext } from '../../helpers/input-ctx.ts';
import { waitFor } from '../../helpers/stream-host.ts';

const MiB = 1024 * 1024;
/** An avcC record (ISO/IEC 14496-15) of one SPS and one PPS, 4-byte NAL lengths. */
function avcC(sps: Buffer, pps: Buffer): Buffer {
  const len = (b: Buffer) => Buffer.of(b.length >> 8, b.length & 0xff);
  const profile = Buffer.of(1, sps[1]!, sps[2]!, sps[3]!, 0xff, 0xe1);
  return Buffer.concat([profile, len(sps), sps, Buffer.of(1), len(pps), pps]);
}
const AVCC = avcC(Buffer.of(0x67, 0x42, 0, 0x1e), Buffer.of(0x68, 0xce));

interface Origin {
  url: string;
  /** Connections the origin accepted. */
  connections: number;
}

/** A scripted origin: the handshake (or `hello` instead), connect/createStream/play answered,
 *  then `playing` writes what it likes — on the first connection only (later ones closed). */
async function rtmpOrigin(
  t: Test,
  playing: (send: (m: RtmpMessage) => void, sock: Socket) => void,
  hello?: (sock: Socket) => void,
): Promise<Origin> {
  const o: Origin = { url: '', connections: 0 };
  const sockets = new Set<Socket>();
  const srv = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('error', () => {});
    if (++o.connections > 1) return void sock.destroy();
    if (hello) return hello(sock);
    const writer = new ChunkWriter();
    const send = (m: RtmpMessage) => {
      if (!sock.destroyed) sock.write(writer.write(m));
    };
    const reader = new ChunkReader((m) => {
      if (m.type !== MSG_COMMAND_AMF0) return;
      const [name, txn] = decodeAmf0(m.payload);
      const reply = (streamId: number, ...v: Parameters<typeof encodeAmf0>) =>
        send({
          csid: 3,
          type: MSG_COMMAND_AMF0,
          streamId,
          timestamp: 0,
          payload: encodeAmf0(...v),
        });
      if (name === 'connect')
        reply(0, '_result', txn!, null, { code: 'NetConnection.Connect.Success' });
      else if (name === 'createStream') reply(0, '_result', txn!, null, 1);
      else if (name === 'play') {
        reply(1, 'onStatus', 0, null, { level: 'status', code: 'NetStream.Play.Start' });
        send(setChunkSize(65536));
        writer.chunkSize = 65536;
        playing(send, sock);
      }
    });
    let hs = Buffer.alloc(0);
    let open = false;
    sock.on('data', (d: Buffer) => {
      if (open) return reader.push(d);
      hs = Buffer.concat([hs, d]);
      if (hs.length < 1 + 2 * HANDSHAKE_SIZE) {
        if (hs.length >= 1 + HANDSHAKE_SIZE && hs.length - d.length < 1 + HANDSHAKE_SIZE) {
          const c1 = hs.subarray(1, 1 + HANDSHAKE_SIZE);
          sock.write(Buffer.concat([handshakeHello(0, (n) => Buffer.alloc(n)), handshakeEcho(c1)]));
        }
        return;
      }
      if (hs.length - d.length < 1 + HANDSHAKE_SIZE) {
        const c1 = hs.subarray(1, 1 + HANDSHAKE_SIZE);
        sock.write(Buffer.concat([handshakeHello(0, (n) => Buffer.alloc(n)), handshakeEcho(c1)]));
      }
      open = true;
      const rest = hs.subarray(1 + 2 * HANDSHAKE_SIZE);
      if (rest.length) reader.push(rest);
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => srv.close(() => r()));
  });
  o.url = `rtmp://127.0.0.1:${(srv.address() as AddressInfo).port}/live/x`;
  return o;
}

function pull(t: Test, url: string): RtmpInput {
  const inp = new RtmpInput({ url, 'client-timeout': 1 }, inputContext());
  inp.start();
  t.teardown(() => inp.close());
  return inp;
}

const video = (payload: Buffer, timestamp: number): RtmpMessage => ({
  csid: 6,
  type: MSG_VIDEO,
  streamId: 1,
  timestamp,
  payload,
});

t.test('frames held for an announced track that never comes: bounded in bytes', async (t) => {
  const gc = collector();
  const FRAMES = 24;
  const FRAME = 2 * MiB;
  const o = await rtmpOrigin(t, (send) => {
    const meta = encodeAmf0('onMetaData', { videocodecid: 7, audiocodecid: 10 });
    send({ csid: 5, type: MSG_DATA_AMF0, streamId: 1, timestamp: 0, payload: meta });
    send(video(Buffer.concat([Buffer.of(0x17, 0, 0, 0, 0), AVCC]), 0));
    // Key frames, the audio track's sequence header never sent.
    for (let i = 0; i < FRAMES; i++) {
      const f = Buffer.alloc(5 + 4 + FRAME, 0x11);
      Buffer.of(0x17, 1, 0, 0, 0).copy(f, 0);
      f.writeUInt32BE(FRAME, 5);
      f[9] = 0x65;
      send(video(f, 40 * (i + 1)));
    }
  });
  gc();
  const before = process.memoryUsage().arrayBuffers;
  const inp = pull(t, o.url);
  await waitFor(() => Number(inp.status()['bytes']) >= FRAMES * FRAME, 20_000, 'every frame read');
  const kept = (await collectUntilSteady()) - before;
  const st = inp.status();
  const mem = (st['memory'] ?? {}) as { held?: number; peak?: number };
  t.ok(Number(mem.peak) <= MAX_HELD_BYTES + FRAME + 64 * 1024, `held at most ${mem.peak} bytes`);
  t.ok(Number(st['videoFrames']) > 0, 'the wait ended: frames go on without the audio track');
  t.ok(kept < 16 * MiB, `memory kept after all ${FRAMES * 2} MiB: ${Math.round(kept / MiB)} MiB`);
});

t.test('the largest chunk size and message length the wire can state', async (t) => {
  const gc = collector();
  const o = await rtmpOrigin(t, (send, sock) => {
    send(setChunkSize(0x7fffffff)); // taken as 2^24 - 1: nothing allocated from it
    // A video message header announcing 2^24 - 1 bytes, then nothing more.
    const h = Buffer.alloc(12);
    h[0] = 6; // fmt 0, chunk stream 6
    h.writeUIntBE(0, 1, 3);
    h.writeUIntBE(0xffffff, 4, 3);
    h[7] = MSG_VIDEO;
    h.writeUInt32LE(1, 8);
    sock.write(h);
  });
  gc();
  const before = process.memoryUsage().arrayBuffers;
  const inp = pull(t, o.url);
  await waitFor(() => inp.status()['lastError'] !== undefined, 10_000, 'refused');
  t.match(
    inp.status()['lastError'],
    /protocol error from origin: message of 16777215 bytes on chunk stream 6 \(over the 8388608 byte cap\)/,
  );
  t.ok(process.memoryUsage().arrayBuffers - before < 4 * MiB, 'nothing allocated for it');
});

t.test('a trickled handshake, and play with no media: ended at client-timeout', async (t) => {
  collectAlways(t, 20);
  const timers = new Set<NodeJS.Timeout>();
  t.teardown(() => {
    for (const x of timers) clearInterval(x);
  });
  /** A byte (or a ping) every 100 ms for at most 5 s: the idle time-out never fires. */
  const every100 = (sock: Socket, write: (i: number) => void) => {
    let i = 0;
    const x = setInterval(() => {
      if (sock.destroyed || i >= 50) return void clearInterval(x);
      write(i++);
    }, 100);
    timers.add(x);
  };
  const endedAt = new Map<string, number>();
  const trickle = await rtmpOrigin(
    t,
    () => {},
    (sock) => {
      const s0s1s2 = Buffer.concat([
        handshakeHello(0, (n) => Buffer.alloc(n)),
        Buffer.alloc(HANDSHAKE_SIZE),
      ]);
      sock.once('close', () => endedAt.set('trickle', Date.now()));
      every100(sock, (i) => sock.write(s0s1s2.subarray(i, i + 1)));
    },
  );
  const silent = await rtmpOrigin(t, (send, sock) => {
    sock.once('close', () => endedAt.set('silent', Date.now()));
    every100(sock, (i) => send(userControl(UC_PING_REQUEST, i)));
  });
  const start = Date.now();
  const a = pull(t, trickle.url);
  const b = pull(t, silent.url);
  await waitFor(() => endedAt.size === 2, 10_000, 'both attempts ended');
  for (const [name, at] of endedAt) {
    t.ok(
      at - start >= 900 && at - start <= 2_500,
      `${name}: ended ${at - start} ms after the start`,
    );
  }
  t.match(
    a.status()['lastError'],
    'no media from origin within 1 s of connecting (handshake not finished)',
  );
  t.match(
    b.status()['lastError'],
    'no media from origin within 1 s of connecting (play started, no media yet)',
  );
});
