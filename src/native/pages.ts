// Segment memory by the page (native/mem/pages.cc): a block is a mapping of its own that takes
// memory only where it is written, and the pages past a finished segment go back to the OS.
import { addon } from './addon.ts';

/** A Buffer of `bytes` over its own mapping: no memory until written, unmapped when collected. */
export function mapBlock(bytes: number): Buffer {
  return addon().mapBlock(bytes);
}

/** Give back the whole pages of a `mapBlock` Buffer from byte `from` on (they read as zero
 *  after); returns the bytes given back. */
export function discardPages(block: Buffer, from: number): number {
  return addon().discardPages(block, from);
}

/** Bytes of the pages under `buf` that are in memory now. */
export function residentBytes(buf: Buffer): number {
  return addon().residentBytes(buf);
}
