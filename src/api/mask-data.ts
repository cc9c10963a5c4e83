// Runtime data carries what inputs report in words, and an input's words quote the URL it pulls
// (with the token or password its operator put there). `/data/*` is readable by viewer
// accounts: every JSON answer there has its credentials masked on the way out, whatever part of
// the status it came from (src/util/credentials.ts).
import type { FastifyInstance } from 'fastify';
import { maskCredentials } from '../util/credentials.ts';

const DATA_PREFIX = '/data';

/** Mask credentials in every string answer under /data (JSON, text); streams pass as they are
 *  (the event feeds mask their rows themselves). */
export function installDataMasking(app: FastifyInstance): void {
  app.addHook('onSend', async (req, _reply, payload) => {
    if (typeof payload !== 'string' || !req.url.startsWith(DATA_PREFIX)) return payload;
    return maskCredentials(payload);
  });
}
