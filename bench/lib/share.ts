// Streams per core counted on what a receiver really got: CPU alone makes a receiver that drops
// look cheaper, so the stream count is scaled by its received share (bytes received ÷ bytes sent).

/** Bytes received ÷ bytes sent over the same window, in [0, 1] (0 when nothing was sent). A
 *  receiver may count a few datagrams sent just before the window opened: never above 1. */
export function receivedShare(received: number, sent: number): number {
  if (!(sent > 0) || !(received > 0)) return 0;
  return Math.min(1, received / sent);
}

/** Streams one full core carries: the `streams` a step ran, scaled by the share of their bytes
 *  the receiver got, over the CPU it used (`cpuPercent` of one core). 0 when it used none. */
export function streamsPerCore(streams: number, cpuPercent: number, share: number): number {
  return cpuPercent > 0 ? (streams * share) / (cpuPercent / 100) : 0;
}
