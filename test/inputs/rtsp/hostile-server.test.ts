// The rtsp input against scripted hostile servers on loopback: one that floods big access units
// on the interleaved channel before it answers PLAY (the frames held for the PLAY answer are
// bounded in bytes), and one that answers every request just inside client-timeout (the whole
// set-up, up to the first media, must still fit in one client-timeout).
import net, { type AddressInfo, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { MAX_EARLY_BYTES, RtspInput } from '../../../src/inputs/rtsp/input.ts';
import { collectUntilSteady } from '../../helpers/gc.ts';
import { collector, inputContext } from '../../helpers/input-ctx.ts';
import { waitFor } from '../../helpers/stream-host.ts';

const MiB = 1024 * 1024;
const SDP = [
  'v=0',
  'o=- 0 0 IN IP4 127.0.0.1',
  's=x',
  'm=video 0 RTP/AVP 96',
  'a=rtpmap:96 H264/90000',
  'a=fmtp:96 packetization-mode=1',
  'a=control:trackID=0',
  '',
].join('\r\n');

/** A scripted server: `answer(method, cseq, sock)` for each request of each connection. */
async function rtspServer(
  t: Test,
  answer: (method: string, cseq: string, sock: Socket) => void,
): Promise<{ url: string; opened: number[]; closed: number[] }> {
  const opened: number[] = [];
  const closed: number[] = [];
  const sockets = new Set<Socket>();
  const srv = net.createServer((sock) => {
    sockets.add(sock);
    opened.push(Date.now());
    sock.on('close', () => closed.push(Date.now()));
    sock.on('error', () => {});
    let buf = '';
    sock.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        const method = head.split(' ')[0]!;
        answer(method, /CSeq: *(\d+)/i.exec(head)?.[1] ?? '0', sock);
      }
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => srv.close(() => r()));
  });
  return { url: `rtsp://127.0.0.1:${(srv.address() as AddressInfo).port}/cam`, opened, closed };
}

function ok(sock: Socket, cseq: string, extra = '', body = ''): void {
  if (sock.destroyed) return;
  sock.write(
    `RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\nSession: 1;timeout=60\r\n${extra}` +
      `${body ? `Content-Length: ${body.length}\r\n` : ''}\r\n${body}`,
  );
}

/** One H.264 access unit of `size` bytes as FU-A fragments on interleaved channel 0. */
function accessUnit(seq: number, ts: number, size: number): Buffer[] {
  const out: Buffer[] = [];
  const PIECE = 60_000;
  for (let at = 0; at < size; at += PIECE) {
    const n = Math.min(PIECE, size - at);
    const last = at + n >= size;
    const rtp = Buffer.alloc(12 + 2 + n, 0x22);
    rtp[0] = 0x80;
    rtp[1] = (last ? 0x80 : 0) | 96;
    rtp.writeUInt16BE((seq + out.length / 2) & 0xffff, 2);
    rtp.writeUInt32BE(ts >>> 0, 4);
    rtp.writeUInt32BE(1, 8);
    rtp[12] = 0x7c; // FU-A, NRI 3
    rtp[13] = (at === 0 ? 0x80 : 0) | (last ? 0x40 : 0) | 5; // an IDR slice
    const h = Buffer.from([0x24, 0, 0, 0]);
    h.writeUInt16BE(rtp.length, 2);
    out.push(h, rtp);
  }
  return out;
}

t.test('access units flooded before the PLAY answer: bounded in bytes', async (t) => {
  const gc = collector();
  const UNITS = 32;
  const UNIT = MiB;
  const srv = await rtspServer(t, (method, cseq, sock) => {
    if (method === 'DESCRIBE') return ok(sock, cseq, 'Content-Type: application/sdp\r\n', SDP);
    if (method === 'SETUP') {
      return ok(sock, cseq, 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n');
    }
    if (method !== 'PLAY') return ok(sock, cseq);
    // Media first, the PLAY answer never.
    let seq = 0;
    for (let i = 0; i < UNITS; i++) {
      const pieces = accessUnit(seq, i * 3600, UNIT);
      seq += pieces.length / 2;
      for (const p of pieces) sock.write(p);
    }
  });
  gc();
  const before = process.memoryUsage().arrayBuffers;
  const inp = new RtspInput({ uri: srv.url, transport: 1, 'client-timeout': 10 }, inputContext());
  inp.start();
  t.teardown(() => inp.close());
  const perUnit = Math.ceil(UNIT / 60_000);
  await waitFor(() => Number(inp.status()['packets']) >= UNITS * perUnit, 20_000, 'all sent');
  const kept = (await collectUntilSteady()) - before;
  const mem = (inp.status()['memory'] ?? {}) as { held?: number; peak?: number };
  t.ok(
    Number(mem.peak) <= MAX_EARLY_BYTES + 128 * 1024,
    `held at most ${mem.peak} bytes waiting for PLAY`,
  );
  t.ok(kept < 12 * MiB, `memory kept with ${UNITS} MiB sent: ${Math.round(kept / MiB)} MiB`);
});

t.test('every answer just inside client-timeout: the set-up still ends at it', async (t) => {
  const srv = await rtspServer(t, (method, cseq, sock) => {
    const later = (fn: () => void) => {
      const x = setTimeout(fn, 600);
      sock.once('close', () => clearTimeout(x));
    };
    if (method === 'DESCRIBE') {
      return later(() => ok(sock, cseq, 'Content-Type: application/sdp\r\n', SDP));
    }
    if (method === 'SETUP') {
      return later(() => ok(sock, cseq, 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n'));
    }
    later(() => ok(sock, cseq)); // OPTIONS, PLAY: answered, no media ever
  });
  const inp = new RtspInput({ uri: srv.url, transport: 1, 'client-timeout': 1 }, inputContext());
  inp.start();
  t.teardown(() => inp.close());
  await waitFor(() => srv.closed.length > 0, 10_000, 'the first session ended');
  // Measured from the server's accept, which a loaded machine delays after the client's start.
  const took = srv.closed[0]! - srv.opened[0]!;
  t.ok(took >= 500 && took <= 2_000, `the first session ended ${took} ms after it connected`);
  await waitFor(() => inp.status()['lastError'] !== undefined, 5_000, 'fault');
  t.match(
    inp.status()['lastError'],
    /^no media from the server for 1 s since connecting \((connecting|describing)\)$/,
  );
});
