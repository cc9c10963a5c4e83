// `server.ffmpeg-path`: the binary every ffmpeg child runs. Pointed at a file that is not
// executable (or not there), the test input's message says what is wrong, where, and what to do
// (the package, the setting); set back to a real ffmpeg, the next start of the child runs it.
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { startServer, tempDir, waitFor } from '../../helpers/server.ts';

const TIMEOUT_MS = 30_000;
const tmp = await tempDir(t, 'sluice-ffmpeg-path-');
const notExecutable = join(tmp, 'ffmpeg');
await writeFile(notExecutable, '#!/bin/sh\nexit 0\n');
await chmod(notExecutable, 0o644);

const srv = await startServer(t, {
  config: {
    server: { 'ffmpeg-path': notExecutable },
    stream: [
      {
        id: 1,
        'stream-name': 'gen',
        pause: false,
        input: [{ type: 'test', width: 160, height: 90, 'frame-rate': 10, 'video-bitrate': 100 }],
      },
    ],
  },
});

interface Status {
  state: string;
  message?: string;
  inputs: { message?: string; transport?: { lastExit?: string } }[];
}
const status = async () => (await (await fetch(`${srv.url}/data/stream/1`)).json()) as Status;
const messageOf = (s: Status) => s.inputs[0]?.message ?? s.message ?? '';
const patch = (body: unknown) =>
  fetch(`${srv.url}/config/server`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify(body),
  });

t.test(
  'a binary that is not executable: the message names it, the package and the setting',
  async (t) => {
    const msg = await waitFor(
      'the input message',
      async () => {
        const m = messageOf(await status());
        return /ffmpeg/.test(m) ? m : undefined;
      },
      TIMEOUT_MS,
    );
    t.match(msg, notExecutable, 'names the file');
    t.match(msg, /not executable/, 'says what is wrong');
    t.match(msg, /apt-get install ffmpeg/, 'names the package');
    t.match(msg, /server\.ffmpeg-path/, 'names the setting');
  },
);

t.test('a path where nothing is: says so', async (t) => {
  const missing = join(tmp, 'no-such-ffmpeg');
  t.ok((await patch({ 'ffmpeg-path': missing })).ok);
  const msg = await waitFor(
    'the message about the missing binary',
    async () => {
      const m = messageOf(await status());
      return m.includes(missing) ? m : undefined;
    },
    TIMEOUT_MS,
  );
  t.match(msg, /does not exist/);
  t.match(msg, /server\.ffmpeg-path/);
});

t.test('set to the real ffmpeg, the next start runs it', async (t) => {
  t.ok((await patch({ 'ffmpeg-path': '/usr/bin/ffmpeg' })).ok);
  await waitFor(
    'the stream running',
    async () => ((await status()).state === 'running' ? true : undefined),
    TIMEOUT_MS,
  );
  t.pass('running on /usr/bin/ffmpeg');
});
