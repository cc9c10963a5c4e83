// A worker thread that publishes into the main thread's native live engine (by share id) what
// its parent asks for, with bodies of its own heap, and reports each body's release from here.
// Used by test/native/live-http-worker.test.ts.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { LiveDelivery } from '../../src/native/live-http.ts';

export type ToPublishWorker =
  | {
      op: 'publish';
      key: string;
      tag: string;
      type: string;
      size?: number;
      fill?: number;
      text?: string;
      passes?: boolean;
    }
  | { op: 'unpublish'; key: string }
  | { op: 'close'; key: '' };
export type FromPublishWorker =
  | { ev: 'done'; op: string; key: string; result?: boolean; error?: string }
  | { ev: 'released'; tag: string; threadId: number };

const port = parentPort!;
const live = LiveDelivery.attach((workerData as { shareId: number }).shareId);
const send = (m: FromPublishWorker) => port.postMessage(m);

port.on('message', (m: ToPublishWorker) => {
  if (m.op === 'close') {
    live.close();
    send({ ev: 'done', op: m.op, key: '' });
    return;
  }
  if (m.op === 'unpublish') {
    send({ ev: 'done', op: m.op, key: m.key, result: live.unpublish(m.key) });
    return;
  }
  const body = m.text !== undefined ? Buffer.from(m.text) : Buffer.alloc(m.size ?? 0, m.fill ?? 0);
  const head = Buffer.from(
    `HTTP/1.1 200 OK\r\nContent-Type: ${m.type}\r\nContent-Length: ${body.length}\r\n`,
  );
  const release = () => send({ ev: 'released', tag: m.tag, threadId });
  try {
    live.publish(m.key, head, body, release, undefined, m.passes ?? false);
    send({ ev: 'done', op: m.op, key: m.key });
  } catch (e) {
    send({ ev: 'done', op: m.op, key: m.key, error: (e as Error).message });
  }
});
