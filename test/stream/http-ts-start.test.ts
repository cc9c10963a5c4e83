// The HTTP-TS start buffer is one buffer reused from key frame to key frame: a client that
// joined keeps the exact bytes it was sent even after later GOPs overwrite that buffer, and
// every new client starts at the latest key frame.
import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import t from 'tap';
import { HttpTsFanout } from '../../src/ott/http-ts.ts';
import { PMT_PID, packet, pat, pmt, psiPackets, VIDEO_PID } from '../helpers/ts-craft.ts';

/** A hijacked reply whose raw response records what was written to it. */
function fakeReply(): { reply: FastifyReply; written: Buffer[] } {
  const written: Buffer[] = [];
  const raw = Object.assign(new EventEmitter(), {
    destroyed: false,
    writableLength: 0,
    writeHead: () => raw,
    flushHeaders: () => {},
    write: (b: Buffer) => {
      written.push(b);
      return true;
    },
    end: () => {},
    destroy: () => {},
  });
  return { reply: { hijack: () => {}, raw } as unknown as FastifyReply, written };
}

/** A video packet; `key` marks a random access point (PUSI + random_access_indicator). */
function video(fill: number, key: boolean, cc: number): Buffer {
  const p = packet({
    pid: VIDEO_PID,
    cc,
    pusi: key,
    adaptation: key,
    payload: Buffer.alloc(170, fill),
  });
  if (key) p[5]! |= 0x40;
  return p;
}

const psi = Buffer.concat([
  ...psiPackets(0, [pat([{ pnr: 1, pid: PMT_PID }])]),
  ...psiPackets(PMT_PID, [pmt(1, VIDEO_PID, [{ type: 0x1b, pid: VIDEO_PID }])]),
]);

/** One GOP: a key frame and `n` more packets, every payload byte = `fill`. */
function gop(fill: number, n: number): Buffer {
  return Buffer.concat([
    video(fill, true, 0),
    ...Array.from({ length: n }, (_, i) => video(fill, false, i + 1)),
  ]);
}

t.test('a joined client keeps its bytes while later GOPs reuse the start buffer', async (t) => {
  const fan = new HttpTsFanout();
  fan.packets(psi);
  const first = gop(0x11, 40);
  fan.packets(first.subarray(0, 188 * 20));
  fan.packets(first.subarray(188 * 20));
  const a = fakeReply();
  fan.serve(a.reply);
  t.equal(a.written.length, 2, 'header, then the start buffer');
  t.same(a.written[1], first, 'the start is the whole GOP since the key frame');
  const sent = Buffer.from(a.written[1]!);
  // Two more GOPs: the start buffer is rewritten from its beginning each time.
  fan.packets(gop(0x22, 10));
  fan.packets(gop(0x33, 60)); // larger than any before: the buffer grows
  t.same(a.written[1], sent, 'what the first client was sent did not change');
  const b = fakeReply();
  fan.serve(b.reply);
  t.same(b.written[1], gop(0x33, 60), 'a new client starts at the latest key frame');
  t.equal(fan.stats().bufferedBytes, 61 * 188);
});

t.test('no start before the first key frame; end() forgets it', async (t) => {
  const fan = new HttpTsFanout();
  fan.packets(psi);
  fan.packets(video(0x44, false, 0));
  const a = fakeReply();
  fan.serve(a.reply);
  t.equal(a.written.length, 0, 'nothing to start from yet');
  fan.packets(gop(0x55, 3));
  fan.end();
  const b = fakeReply();
  fan.serve(b.reply);
  t.equal(b.written.length, 0);
  t.equal(fan.stats().bufferedBytes, 0);
});

t.test(
  'live bytes go out in pooled blocks, reused only once every write of one completed',
  async (t) => {
    const fan = new HttpTsFanout();
    /** A client whose writes complete when the test says so. */
    const client = () => {
      const c = fakeReply();
      const pending: (() => void)[] = [];
      (c.reply.raw as unknown as { write: unknown }).write = (b: Buffer, cb?: () => void) => {
        c.written.push(b);
        if (cb) pending.push(cb);
        return true;
      };
      fan.serve(c.reply);
      return {
        ...c,
        complete: () => {
          for (const cb of pending.splice(0)) cb();
        },
      };
    };
    const a = client();
    const b = client();
    const first = gop(0x66, 10);
    fan.packets(first);
    const sentA = a.written.at(-1)!;
    t.same(sentA, first, 'both clients get the batch');
    t.equal(b.written.at(-1), sentA, 'one copy shared by the clients');
    a.complete(); // b's write of it is still pending: the block is not reused
    const second = gop(0x77, 10);
    fan.packets(second);
    t.not(a.written.at(-1)!.buffer, sentA.buffer, 'a block still being written is not reused');
    t.same(sentA, first, 'its bytes are intact');
    a.complete();
    b.complete(); // every write of both blocks done
    fan.packets(gop(0x88, 10));
    const reused = [sentA.buffer, b.written.at(-2)!.buffer];
    t.ok(reused.includes(a.written.at(-1)!.buffer), 'a completed block is reused');
  },
);
