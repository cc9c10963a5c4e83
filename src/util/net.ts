// IPv4 address helpers shared by the UDP/RTP inputs and outputs and the native UDP façade:
// is an address multicast, and which local address does an interface name stand for.
import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';

/** First octets of the IPv4 multicast range 224.0.0.0/4. */
const MULTICAST_FIRST_OCTET_MIN = 224;
const MULTICAST_FIRST_OCTET_MAX = 239;

export function isMulticast(addr: string): boolean {
  const first = Number(addr.split('.')[0]);
  return first >= MULTICAST_FIRST_OCTET_MIN && first <= MULTICAST_FIRST_OCTET_MAX;
}

/**
 * An interface name or IPv4 address → IPv4 address: the address itself, or the first IPv4
 * address of the interface so named; undefined when there is no such interface or it has no
 * IPv4 address (each caller reports that in its own terms).
 */
export function interfaceAddress(nameOrIp: string): string | undefined {
  if (isIPv4(nameOrIp)) return nameOrIp;
  return networkInterfaces()[nameOrIp]?.find((a) => a.family === 'IPv4')?.address;
}

/** `bind-if` is an interface name or a local IPv4 address; returns the address ('' = any). */
export function resolveInterface(bindIf: string): string {
  if (!bindIf) return '';
  const address = interfaceAddress(bindIf);
  if (address === undefined) {
    throw new Error(`bind-if ${bindIf}: no such interface with an IPv4 address`);
  }
  return address;
}
