// A self-signed EC certificate for TLS listener tests, made with `openssl req`.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Writes `<cn>.crt` and `<cn>.key` into `dir`; valid for 127.0.0.1 and the common name. */
export async function selfSigned(dir: string, cn: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${cn}.crt`);
  const key = join(dir, `${cn}.key`);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    '2',
    '-subj',
    `/CN=${cn}`,
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ]);
  return { cert, key };
}
