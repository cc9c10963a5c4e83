// The demux filter rule (src/dvb/pid-filter.ts): the whole TS while anything is unknown or a
// reader takes it all; else the SI PIDs, the PMTs and the ES and PCR PIDs of the programmes read
// (and the PMTs of cam-pnr), as long as that stays within MAX_FILTER_PIDS.
import t from 'tap';
import { chooseFilter, MAX_FILTER_PIDS, SI_PIDS } from '../../src/dvb/pid-filter.ts';
import type { Pmt } from '../../src/mpegts/psi.ts';

const pmtOf = (pnr: number, pcr: number, es: number[]): Pmt => ({
  programNumber: pnr,
  version: 0,
  currentNext: true,
  pcrPid: pcr,
  programInfo: Buffer.alloc(0),
  streams: es.map((pid) => ({ streamType: 0x1b, pid, descriptors: Buffer.alloc(0) })),
});
const pat = new Map([
  [101, 0x100],
  [102, 0x200],
  [103, 0x300],
]);
const pmts = new Map([
  [101, pmtOf(101, 0x101, [0x101, 0x102])],
  [102, pmtOf(102, 0x1ffe, [0x201])],
]);
const base = { pmtOnly: [], pat, pmts, perPidAllowed: true };

t.test('per PID', async (t) => {
  t.same(chooseFilter({ ...base, readers: new Set([101]) }), {
    whole: false,
    pids: [...SI_PIDS, 0x100, 0x101, 0x102],
  });
  t.same(
    chooseFilter({ ...base, readers: new Set([102]) }),
    { whole: false, pids: [...SI_PIDS, 0x200, 0x201, 0x1ffe] },
    'a PCR on a PID of its own',
  );
  t.same(
    chooseFilter({ ...base, readers: new Set([101]), pmtOnly: [103] }),
    { whole: false, pids: [...SI_PIDS, 0x100, 0x101, 0x102, 0x300] },
    'the PMT of a cam-pnr programme nobody reads',
  );
  t.same(
    chooseFilter({ ...base, readers: new Set([104]) }),
    { whole: false, pids: [...SI_PIDS] },
    'a programme not in the PAT: the tables only, until it appears',
  );
  t.same(chooseFilter({ ...base, readers: new Set() }), { whole: false, pids: [...SI_PIDS] });
});

t.test('the whole TS', async (t) => {
  t.match(chooseFilter({ ...base, readers: null }), { whole: true, reason: /whole TS/ });
  t.match(chooseFilter({ ...base, readers: new Set([101]), pat: null }), {
    whole: true,
    reason: /PAT/,
  });
  t.match(chooseFilter({ ...base, readers: new Set([103]) }), {
    whole: true,
    reason: 'the PMT of programme 103 is not known yet',
  });
  t.match(chooseFilter({ ...base, readers: new Set([101]), perPidAllowed: false }), {
    whole: true,
    reason: /T2-MI/,
  });
  const many = pmtOf(
    101,
    0x101,
    Array.from({ length: MAX_FILTER_PIDS }, (_, i) => 0x400 + i),
  );
  t.match(
    chooseFilter({ ...base, readers: new Set([101]), pmts: new Map([[101, many]]) }),
    { whole: true, reason: /more than 16/ },
    'past the limit',
  );
});
