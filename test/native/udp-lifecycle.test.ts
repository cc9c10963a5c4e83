// UdpReceiver lifecycle edge cases in a child process of their own: exit with a receiver open
// and traffic flowing, receivers dropped without close() and collected, close from inside onData.
import { spawn, spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';

const CHILD_TIMEOUT_MS = 20_000;
const udp = new URL('../../src/native/udp.ts', import.meta.url).href;
const dir = mkdtempSync(join(tmpdir(), 'sluice-udp-life-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function runChild(name: string, body: string) {
  const file = join(dir, `${name}.ts`);
  writeFileSync(
    file,
    `import dgram from 'node:dgram';\nimport { UdpReceiver } from '${udp}';\n${body}\n`,
  );
  return spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', file], {
    encoding: 'utf8',
    timeout: CHILD_TIMEOUT_MS,
  });
}

t.test('process.exit() while a receiver is open and receiving', async (t) => {
  const r = runChild(
    'exit-open',
    `
const rx = new UdpReceiver({ port: 0, address: '127.0.0.1', batchLatencyMs: 0, onData: (_b, n) => {
  seen += n;
  if (seen >= 20) { console.log('exiting'); process.exit(0); }
} });
let seen = 0;
const s = dgram.createSocket('udp4');
setInterval(() => { for (let i = 0; i < 10; i++) s.send(Buffer.alloc(1316, 0x47), rx.port, '127.0.0.1'); }, 5);
`,
  );
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /exiting/);
});

t.test(
  'receivers dropped without close() are closed when collected (after an explicit close of the rest)',
  async (t) => {
    const r = runChild(
      'drop',
      `
for (let i = 0; i < 20; i++) {
  const rx = new UdpReceiver({ port: 0, onData: () => {} });
  if (i % 2 === 0) rx.close();
}
(globalThis as { gc?: () => void }).gc?.();
console.log('done');
process.exit(0);
`,
    );
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /done/);
  },
);

t.test('an open receiver keeps the process alive until close()', async (t) => {
  // The child has no timer and nothing else pending: only the receiver can keep it up until
  // the datagram we send once it says it is listening.
  const file = join(dir, 'alive.ts');
  writeFileSync(
    file,
    `import { UdpReceiver } from '${udp}';
const rx = new UdpReceiver({ port: 0, address: '127.0.0.1', onData: () => { console.log('got'); rx.close(); } });
console.log('port', rx.port);
`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  const sock = dgram.createSocket('udp4');
  t.teardown(() => sock.close());
  const code = await new Promise<number | null>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error('timed out')), CHILD_TIMEOUT_MS);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /port (\d+)/.exec(out);
      if (m && !out.includes('sent')) {
        out += 'sent';
        sock.send(Buffer.alloc(188, 0x47), Number(m[1]), '127.0.0.1');
      }
    });
    child.once('exit', (c) => {
      clearTimeout(deadline);
      resolve(c);
    });
  });
  t.equal(code, 0);
  t.match(out, /got/, 'still alive to receive the datagram, then ended after close()');
});
