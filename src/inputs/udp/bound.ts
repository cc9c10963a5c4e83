// A dgram socket's bind as a promise (InputTransport.opened of the rtp and prompeg inputs):
// the bind error arrives as an 'error' event after start() returned.
import type dgram from 'node:dgram';

/** Resolves on 'listening', rejects with the first error before it. Handled here too, so an
 *  input whose opened() nobody awaits leaves no unhandled rejection. */
export function socketBound(sock: dgram.Socket): Promise<void> {
  const p = new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    sock.once('error', onError);
    sock.once('listening', () => {
      sock.off('error', onError);
      resolve();
    });
  });
  p.catch(() => {});
  return p;
}
