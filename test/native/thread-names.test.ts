// sluice's native threads carry names of their own (`top -H`, `ps -L`, perf, /proc), so an
// operator can tell the receive threads from V8's, which are all named `node`.
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { RistReceiver } from '../../src/native/rist.ts';
import { SrtReceiver } from '../../src/native/srt.ts';
import { UdpReceiver } from '../../src/native/udp.ts';
import { freePort, waitFor } from '../helpers/stream-host.ts';

const noop = () => {};

/** The names of this process's threads now. */
function threadNames(): string[] {
  const names: string[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      names.push(readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim());
    } catch {
      // the thread ended meanwhile
    }
  }
  return names;
}

t.test('the UDP receive thread is sluice-udp while a receiver is open', async (t) => {
  const rx = new UdpReceiver({ port: 0, address: '127.0.0.1', onData: noop });
  t.teardown(() => rx.close());
  // The thread names itself as it starts: wait for it rather than race it.
  await waitFor(() => threadNames().includes('sluice-udp'), 5000, 'the sluice-udp thread');
  rx.close();
  t.notOk(threadNames().includes('sluice-udp'), 'gone with the last receiver');
});

t.test('the SRT receive thread is sluice-srt', async (t) => {
  const rx = new SrtReceiver({ mode: 'listener', port: 0, onData: noop });
  t.teardown(() => rx.close());
  await waitFor(() => threadNames().includes('sluice-srt'), 5000, 'the sluice-srt thread');
  t.pass();
});

t.test("the RIST receiver's timer thread is sluice-rist", async (t) => {
  const port = await freePort();
  const rx = new RistReceiver({ profile: 1, peers: [{ port, intf: '127.0.0.1' }], onData: noop });
  t.teardown(() => rx.close());
  await waitFor(() => threadNames().includes('sluice-rist'), 5000, 'the sluice-rist thread');
  t.pass();
});
