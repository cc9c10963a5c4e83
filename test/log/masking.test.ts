// The log masks credentials wherever a line carries them (src/log.ts): the message, top-level
// string fields, and errors logged as objects, whose messages quote the URL they failed on.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/log.ts';

const TOKEN = 'viewer-secret-7f3a9c';
const URL_WITH = `http://origin.example/live/index.m3u8?token=${TOKEN}&password=hunter22`;

t.test('a token or password never reaches a log line, errors included', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-log-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'log.json');
  const log = createLogger({ level: 'info', destination: file });
  class OriginError extends Error {}
  const err = new OriginError(`404 from origin: no such stream (${URL_WITH})`);
  log.info(`fetching ${URL_WITH}`);
  log.info({ url: URL_WITH }, 'playlist');
  log.warn({ err }, 'input failed');
  log.error(err);
  log.warn({ error: new Error(`refused ${URL_WITH}`), attempt: 2 }, 'retry');
  await new Promise<void>((ok, fail) => log.flush((e) => (e ? fail(e) : ok())));
  const lines = (await readFile(file, 'utf8')).trim().split('\n');
  t.equal(lines.length, 5);
  for (const l of lines) {
    t.notMatch(l, TOKEN, 'no token');
    t.notMatch(l, 'hunter22', 'no password');
  }
  const errLine = JSON.parse(lines[2]!) as {
    err: { type: string; message: string; stack: string };
  };
  t.equal(errLine.err.type, 'OriginError', 'the error keeps its class name');
  t.match(errLine.err.message, /token=sha256:[0-9a-f]{12}&password=\*\*\*/, 'masked in place');
  t.match(
    errLine.err.stack,
    /token=sha256:[0-9a-f]{12}[\s\S]*masking\.test/,
    'the stack is kept, masked',
  );
  t.equal(err.message.includes(TOKEN), true, "the caller's error itself is not changed");
});
