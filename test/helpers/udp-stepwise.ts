// Send datagrams to a receiver one at a time, each only after the previous one was delivered:
// every batch then holds exactly one datagram whatever the scheduling (no timing decides the
// batch count).
import dgram from 'node:dgram';

export interface Stepwise {
  /** Call from the receiver's onData after counting what it got. */
  delivered(): void;
  /** Send each payload once `count()` shows the one before it arrived. */
  send(port: number, payloads: Buffer[], count: () => number): Promise<void>;
  close(): void;
}

export function stepwise(): Stepwise {
  const tx = dgram.createSocket('udp4');
  let wake: (() => void) | null = null;
  return {
    delivered: () => wake?.(),
    async send(port, payloads, count) {
      for (let k = 0; k < payloads.length; k++) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`datagram ${k} not delivered within 5 s`)),
            5000,
          );
          wake = () => {
            if (count() > k) {
              clearTimeout(timer);
              resolve();
            }
          };
          tx.send(payloads[k]!, port, '127.0.0.1');
        });
      }
    },
    close: () => tx.close(),
  };
}
