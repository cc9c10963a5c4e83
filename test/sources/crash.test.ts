// Crash safety of API writes: the real server takes a loop of PATCHes and is killed with
// SIGKILL mid-loop, several times. The config file must always be complete, valid JSON (a
// reader polling it all along never sees anything else), and no acknowledged write is lost.
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { loadConfigText } from '../../src/config/store.ts';
import { startServer } from '../helpers/server.ts';

const ROUNDS = 4;
/** Acknowledged PATCHes after which each round kills the server, with the next PATCH in
 *  flight (varied per round, so the kill lands at different points of the loop). */
const ACKS_BEFORE_KILL = [1, 7, 20, 45];

t.test('kill -9 during a PATCH loop never leaves a broken file', async (t) => {
  const first = await startServer(t, { config: { user: [{ login: 'alice', password: 'p0' }] } });
  const file = first.configPath!;
  const { port, dataDir } = first;

  // A reader polling the file for the whole test.
  let reads = 0;
  const bad: string[] = [];
  let reading = true;
  const reader = (async () => {
    while (reading) {
      try {
        JSON.parse(await readFile(file, 'utf8'));
        reads++;
      } catch (err) {
        bad.push(String(err));
      }
    }
  })();

  let srv = first;
  let seq = 0;
  let totalAcked = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let acked = -1;
    let stop = false;
    let roundAcks = 0;
    let enough!: () => void;
    const killTime = new Promise<void>((r) => (enough = r));
    const writer = (async () => {
      while (!stop) {
        const n = ++seq;
        try {
          const res = await fetch(`${srv.url}/config/user/alice`, {
            method: 'PATCH',
            headers: { 'content-type': 'application/merge-patch+json' },
            body: JSON.stringify({ password: `p${n}` }),
          });
          if (res.status !== 200) throw new Error(`PATCH answered ${res.status}`);
          await res.arrayBuffer();
          acked = n;
          totalAcked++;
          if (++roundAcks === ACKS_BEFORE_KILL[round]) enough();
        } catch {
          return; // the server is gone
        }
      }
    })();
    await Promise.race([killTime, writer]); // the writer ends early only if the server died
    await srv.kill9();
    stop = true;
    await writer;

    const text = await readFile(file, 'utf8');
    const loaded = loadConfigText(text); // throws on a truncated or invalid file
    const users = loaded.doc['user'] as Array<{ password: string }>;
    const onDisk = Number(users[0]!.password.slice(1));
    t.ok(acked > 0, `round ${round}: some PATCHes were acknowledged (${acked})`);
    t.ok(onDisk >= acked, `round ${round}: acknowledged write p${acked} is on disk (p${onDisk})`);

    if (round < ROUNDS - 1) srv = await startServer(t, { configPath: file, port, dataDir });
  }
  reading = false;
  await reader;
  t.ok(totalAcked > ROUNDS, `${totalAcked} PATCHes acknowledged in all`);
  t.ok(reads > 100, `the reader read the file ${reads} times`);
  t.same(bad, [], 'the reader never saw invalid JSON');
});
