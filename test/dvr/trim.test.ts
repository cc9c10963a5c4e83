// The proportional size trim, table-driven: every stream gives the same share of its archive
// seconds whatever its chunk length, a chunk goes when half of it fits, the difference carries
// between passes, the bytes to free are reached, the cut and protection bound it.
import t from 'tap';
import { chooseTrim, type ProtectedRange, trimQuotas } from '../../src/dvr/cleanup.ts';
import { addRun, testStorage } from './helpers.ts';

t.test('trimQuotas: the same share of every stream, plus what it owes', async (t) => {
  const cases: {
    name: string;
    need: number;
    streams: [string, number, number][]; // name, bytes, seconds
    owed?: [string, number][];
    want: [string, number][];
  }[] = [
    {
      name: 'a tenth of the bytes: a tenth of each depth',
      need: 100,
      streams: [
        ['fast', 600, 200],
        ['slow', 400, 200],
      ],
      want: [
        ['fast', 20],
        ['slow', 20],
      ],
    },
    {
      name: 'deeper stream gives more seconds',
      need: 500,
      streams: [
        ['a', 500, 100],
        ['b', 500, 300],
      ],
      want: [
        ['a', 50],
        ['b', 150],
      ],
    },
    {
      name: 'carried seconds add, given-ahead seconds subtract',
      need: 100,
      streams: [
        ['a', 500, 100],
        ['b', 500, 100],
      ],
      owed: [
        ['a', 1.5],
        ['b', -2],
      ],
      want: [
        ['a', 11.5],
        ['b', 8],
      ],
    },
    {
      name: 'more than everything: everything',
      need: 5000,
      streams: [['a', 1000, 60]],
      want: [['a', 60]],
    },
    { name: 'nothing to free', need: 0, streams: [['a', 1000, 60]], want: [] },
    {
      name: 'a stream with no bytes gives nothing',
      need: 100,
      streams: [
        ['a', 1000, 60],
        ['empty', 0, 0],
      ],
      want: [['a', 6]],
    },
  ];
  for (const c of cases) {
    const bytes = new Map(c.streams.map(([n, b]) => [n, b]));
    const seconds = new Map(c.streams.map(([n, , s]) => [n, s]));
    const got = trimQuotas(c.need, bytes, seconds, new Map(c.owed ?? []));
    t.same(
      [...got].map(([n, q]) => [n, Math.round(q * 1000) / 1000]),
      c.want,
      c.name,
    );
  }
});

t.test('chooseTrim: chunks per stream and what carries', async (t) => {
  const cases: {
    name: string;
    /** name, chunk seconds, chunks, bytes per chunk */
    streams: [string, number, number, number][];
    need: number;
    cutSec?: number;
    owed?: [string, number][];
    protect?: [string, number, number][]; // stream, first and last chunk index protected
    /** chunks removed per stream, and what each owes after */
    removed: [string, number][];
    owedAfter: [string, number][];
  }[] = [
    {
      name: '1 s and 4 s chunks, equal depth: the same seconds each',
      streams: [
        ['fast', 1, 40, 3000],
        ['slow', 4, 10, 8000],
      ],
      need: 40_000, // of 200,000: a fifth, 8 s of each
      removed: [
        ['fast', 8],
        ['slow', 2],
      ],
      owedAfter: [
        ['fast', 0],
        ['slow', 0],
      ],
    },
    {
      // 1.5 s of each: fast 2 chunks (0.5 s ahead), slow none (less than half a chunk); the
      // bytes are still short, so the stream owing most (slow) gives one chunk ahead.
      name: 'short of the bytes: the stream owing most gives a chunk ahead',
      streams: [
        ['fast', 1, 40, 3000],
        ['slow', 4, 10, 8000],
      ],
      need: 7_500,
      removed: [
        ['fast', 2],
        ['slow', 1],
      ],
      owedAfter: [
        ['fast', -0.5],
        ['slow', -2.5],
      ],
    },
    {
      name: 'what was owed is given on the next pass',
      streams: [
        ['fast', 1, 40, 3000],
        ['slow', 4, 10, 8000],
      ],
      need: 7_500,
      owed: [
        ['fast', -1.5],
        ['slow', 1.5],
      ],
      removed: [
        ['fast', 0],
        ['slow', 1],
      ],
      owedAfter: [
        ['fast', 0],
        ['slow', -1],
      ],
    },
    {
      name: 'the cut bounds a pass; a stream at its cut owes nothing',
      streams: [
        ['a', 10, 30, 1000],
        ['b', 10, 30, 1000],
      ],
      need: 30_000,
      cutSec: 50,
      removed: [
        ['a', 5],
        ['b', 5],
      ],
      owedAfter: [
        ['a', 0],
        ['b', 0],
      ],
    },
    {
      name: 'protected chunks stay; the next ones go instead',
      streams: [['a', 2, 10, 1000]],
      need: 4_000,
      protect: [['a', 0, 1]],
      removed: [['a', 4]],
      owedAfter: [['a', 0]],
    },
  ];
  for (const c of cases) {
    const { storage, clock } = await testStorage(t);
    const start = clock.now() - 3_600_000;
    const rows = new Map(
      c.streams.map(([n, d, k, b]) => [n, addRun(storage, n, start, k, { duration: d, bytes: b })]),
    );
    const ranges: ProtectedRange[] = (c.protect ?? []).map(([n, a, z]) => ({
      stream: n,
      from: rows.get(n)![a]!.start_ms,
      to: rows.get(n)![z]!.start_ms + 1,
    }));
    const owed = new Map(c.owed ?? []);
    const out = chooseTrim(
      storage.index!,
      c.streams.map(([n]) => n),
      {
        needBytes: c.need,
        now: clock.now(),
        bytes: storage.streamBytes(),
        seconds: storage.streamSeconds(),
        cutSec: c.cutSec ?? 300,
        ranges,
        minHours: new Map(),
        owed,
      },
    );
    t.same(
      c.streams.map(([n]) => [n, out.filter((r) => r.stream === n).length]),
      c.removed,
      `${c.name}: chunks removed`,
    );
    t.same(
      [...owed].map(([n, s]) => [n, Math.round(s * 1000) / 1000]),
      c.owedAfter,
      `${c.name}: carried`,
    );
    for (const [n, a, z] of c.protect ?? []) {
      const kept = rows.get(n)!.slice(a, z + 1);
      t.notOk(
        out.some((r) => kept.some((k) => k.id === r.id)),
        `${c.name}: protected chunks kept`,
      );
    }
  }
});
