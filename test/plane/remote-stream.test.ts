// The main thread's proxy of a worker stream (src/plane/remote-stream.ts) against a fake link:
// which of the worker's snapshots it shows around an update.
import t from 'tap';
import type { StreamSnapshot } from '../../src/plane/protocol.ts';
import { RemoteStream, type WorkerLink } from '../../src/plane/remote-stream.ts';
import { makeHost, streamResource, tempDir } from '../helpers/stream-host.ts';

function fakeLink(answer: () => Promise<void>): WorkerLink {
  return { index: 0, request: answer, send() {}, rekey() {} } as unknown as WorkerLink;
}

function snap(state: StreamSnapshot['state'], updates: number): StreamSnapshot {
  return {
    key: 'name:s',
    state,
    running: state !== 'paused',
    status: { state },
    row: { state } as StreamSnapshot['row'],
    metrics: { state } as StreamSnapshot['metrics'],
    alerts: [],
    epg: {} as StreamSnapshot['epg'],
    adapterIds: [],
    memoryBytes: 0,
    updates,
  };
}

const record = (pause: boolean) => streamResource({ 'stream-name': 's', pause, input: [] });

t.test('a snapshot older than the update is not shown; the update’s own is', async (t) => {
  let answer!: () => void;
  const proxy = new RemoteStream(
    record(true),
    fakeLink(() => new Promise((r) => (answer = r))),
    makeHost(tempDir(t)),
  );
  proxy.take(snap('paused', 0));
  const update = proxy.update(record(false), []);
  t.equal(proxy.state(), 'starting', 'starting at once');
  proxy.take(snap('paused', 0));
  t.equal(proxy.state(), 'starting', 'a snapshot from before the update is not shown');
  proxy.take(snap('running', 1));
  answer();
  await update;
  t.equal(proxy.state(), 'running', 'the worker’s snapshot after the update is shown');
});

t.test('an update the worker did not take leaves its snapshots shown', async (t) => {
  const proxy = new RemoteStream(
    record(false),
    fakeLink(() => Promise.reject(new Error('no stream name:s in this worker'))),
    makeHost(tempDir(t)),
  );
  proxy.take(snap('starting', 0));
  await t.rejects(proxy.update(record(false), []));
  proxy.take(snap('running', 0));
  t.equal(proxy.state(), 'running', 'the next snapshot is shown');
});
