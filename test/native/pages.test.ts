// Segment blocks by the page (native/mem/pages.cc): a mapped block takes memory only where
// written, discardPages gives back whole pages past an offset (they read as zero), errors say why.
import t from 'tap';
import { discardPages, mapBlock, residentBytes } from '../../src/native/pages.ts';

const PAGE = 4096;

t.test(
  'a block takes memory where written and gives back the pages past its contents',
  async (t) => {
    const block = mapBlock(1 << 20);
    t.equal(block.length, 1 << 20);
    t.equal(residentBytes(block), 0, 'nothing resident before a write');
    block.fill(0x47, 0, 300_000);
    t.ok(residentBytes(block) >= 300_000, 'the written pages are resident');
    const given = discardPages(block, 100_000);
    const keep = Math.ceil(100_000 / PAGE) * PAGE;
    t.equal(given, (1 << 20) - keep, 'whole pages from the one after byte 100,000');
    t.equal(residentBytes(block), keep);
    t.equal(block[99_999], 0x47, 'the contents are kept');
    t.equal(block[keep - 1], 0x47, 'and the rest of their last page');
    t.equal(block[keep], 0, 'the pages given back read as zero');
    t.equal(discardPages(block, 1 << 20), 0, 'nothing past the end');
  },
);

t.test('errors say what is wrong', async (t) => {
  t.throws(() => mapBlock(0), { code: 'ERR_NATIVE_ARG', message: /mapBlock: bytes must be/ });
  const heap = Buffer.alloc(3 * PAGE).subarray(1);
  t.throws(() => discardPages(heap, 0), { code: 'ERR_NATIVE_ARG', message: /mapBlock Buffer/ });
  t.throws(() => discardPages(mapBlock(PAGE), -1), { code: 'ERR_NATIVE_ARG' });
  t.ok(residentBytes(heap) > 0, 'residentBytes reads any Buffer');
});
