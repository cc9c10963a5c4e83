// ACME against Debian's pebble on loopback (issue 24 item 3): the server orders a certificate
// for `localhost`, pebble validates the HTTP-01 challenge on the admin port, the certificate and
// key land in the data dir, and HTTPS serves it — curl verifies it against pebble's root.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { freePort, startServer, tempDir, waitFor } from '../helpers/server.ts';
import { selfSigned } from '../helpers/tls.ts';

const run = promisify(execFile);
const ISSUE_MS = 60_000;

t.test('a certificate from pebble, served over HTTPS', async (t) => {
  const dir = await tempDir(t, 'sluice-acme-');
  // pebble's own TLS (its directory is https): a throwaway certificate the server trusts.
  const pebbleTls = await selfSigned(dir, 'pebble');
  const [acmePort, mgmtPort, adminPort, httpsPort] = await Promise.all(
    Array.from({ length: 4 }, () => freePort()),
  );
  const pebbleConfig = path.join(dir, 'pebble.json');
  await writeFile(
    pebbleConfig,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${mgmtPort}`,
        certificate: pebbleTls.cert,
        privateKey: pebbleTls.key,
        // HTTP-01 is checked on the admin server's port (a real CA asks port 80).
        httpPort: adminPort,
        tlsPort: await freePort(),
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const pebble: ChildProcess = spawn('pebble', ['-config', pebbleConfig], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let pebbleOut = '';
  for (const s of [pebble.stdout!, pebble.stderr!]) s.on('data', (d: Buffer) => (pebbleOut += d));
  t.teardown(() => pebble.kill('SIGKILL'));
  await waitFor(
    'pebble listening',
    () => (pebbleOut.includes('ACME directory available') ? true : undefined),
    20_000,
  );

  const srv = await startServer(t, {
    port: adminPort,
    config: {
      'http-server': { 'https-port': httpsPort },
      acme: {
        enable: true,
        email: 'ops@example.com',
        domains: ['localhost'],
        'directory-url': `https://127.0.0.1:${acmePort}/dir`,
      },
    },
    env: { NODE_EXTRA_CA_CERTS: pebbleTls.cert },
  });
  const acmeStatus = async () => {
    const st = (await (await fetch(`${srv.url}/data/status`)).json()) as {
      resources: { kind: string; status?: Record<string, unknown> }[];
    };
    return st.resources.find((r) => r.kind === 'acme')?.status ?? {};
  };
  const issued = await waitFor(
    'the ACME certificate',
    async () => {
      const s = await acmeStatus();
      return s.state === 'valid' ? s : undefined;
    },
    ISSUE_MS,
  ).catch(async (e) => {
    throw new Error(
      `${(e as Error).message}; acme: ${JSON.stringify(await acmeStatus())}\npebble: ${pebbleOut.slice(-2000)}`,
    );
  });
  t.match(issued, { state: 'valid', notAfter: /Z$/, certificate: /acme\/cert\.pem$/ });
  t.match(pebbleOut, /validat/i, 'pebble validated the HTTP-01 challenge');

  // HTTPS comes up with it; curl verifies the chain against pebble's root.
  const rootPem = path.join(dir, 'pebble-root.pem');
  const { stdout: root } = await run('curl', ['-sk', `https://127.0.0.1:${mgmtPort}/roots/0`]);
  await writeFile(rootPem, root);
  const res = await waitFor(
    'HTTPS with the issued certificate',
    async () => {
      const r = await run('curl', [
        ...['-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', rootPem],
        ...[
          '--resolve',
          `localhost:${httpsPort}:127.0.0.1`,
          `https://localhost:${httpsPort}/data/status`,
        ],
      ]).catch(() => undefined);
      return r?.stdout === '200' ? r.stdout : undefined;
    },
    20_000,
  );
  t.equal(res, '200', 'the certificate verifies against the CA that issued it');
});
