// Socket options Node does not expose, on sockets Node owns (native/net/socket_opts.cc): the
// receive low-water mark of a TCP socket.
import type { Socket } from 'node:net';
import { addon } from './addon.ts';
import { argError, fromNative } from './errors.ts';

/** Linux caps the mark at half the receive buffer; above this it would hold bytes for nothing. */
export const MAX_RECV_LOW_WATER = 1 << 20;

/** The socket's file descriptor, or -1 when it has none (not connected yet, closed, or not a
 *  kernel socket, e.g. TLS over a JS stream). */
export function socketFd(socket: Socket): number {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : -1;
}

/**
 * Sets SO_RCVLOWAT: the socket is reported readable (and Node reads it) only once `bytes` are
 * queued — or the peer closed, or the kernel runs short of receive memory. 1 is the default
 * (every byte wakes the reader). Lowering it wakes the reader at once when the new mark is
 * already met. Throws a NativeError with the errno name (EBADF on a closed fd).
 */
export function setRecvLowWater(fd: number, bytes: number): void {
  if (!Number.isInteger(fd) || fd < 0) throw argError('fd must be a non-negative integer');
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > MAX_RECV_LOW_WATER) {
    throw argError(`bytes must be an integer from 1 to ${MAX_RECV_LOW_WATER}`);
  }
  try {
    addon().setRecvLowWater(fd, bytes);
  } catch (err) {
    throw fromNative(err);
  }
}

/** The mark the kernel holds for the socket. */
export function recvLowWater(fd: number): number {
  if (!Number.isInteger(fd) || fd < 0) throw argError('fd must be a non-negative integer');
  try {
    return addon().recvLowWater(fd);
  } catch (err) {
    throw fromNative(err);
  }
}
