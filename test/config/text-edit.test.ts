// Format-preserving config writes: a hand-formatted file (compact lines, mixed indentation,
// members on one line) edited the way the API edits it stays as it was except for the lines
// the change needs, as `git diff` counts them; the result means exactly the new minimal document.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { deepEqual } from '../../src/config/defaults.ts';
import {
  elideDefaults,
  formatConfig,
  formatConfigOver,
  loadConfigText,
} from '../../src/config/store.ts';
import { editJsonText } from '../../src/config/text-edit.ts';
import type { ConfigDocument } from '../../src/config/types.ts';
import { tempDir } from '../helpers/server.ts';

// Tabs and spaces mixed, records on one line and over several, a member on a line of its own
// after others on one line.
const HAND = `{
  "x-svc-version": "2.0.2.361",
  "http-server": {"port": 8080, "bind-address": "127.0.0.1"},
\t"user": [
\t  {"login": "alice", "password": "pw", "role": "admin"},
\t  { "login":"bob","password":"pw2" }
\t],
  "stream": [
    { "id": 1, "stream-name": "news",
        "input": [ {"type": "udp", "port": 5000, "address": "239.0.0.1"} ] },
    {
       "id": 2,
       "stream-name": "sport",
       "ott-hls": 1
    }
  ]
}
`;

type Doc = {
  'http-server': Record<string, unknown>;
  user: Array<Record<string, unknown>>;
  stream: Array<Record<string, unknown> & { input?: Array<Record<string, unknown>> }>;
};

interface Case {
  name: string;
  edit: (d: Doc) => void;
  /** Most lines `git diff` may show removed and most it may show added. */
  removed: number;
  added: number;
}

const CASES: Case[] = [
  {
    name: 'one member changed inside a one-line object',
    edit: (d) => {
      d['http-server']['port'] = 8081;
    },
    removed: 1,
    added: 1,
  },
  {
    name: 'one member changed in a record spread over lines',
    edit: (d) => {
      d.stream[1]!['ott-hls'] = 3;
    },
    removed: 1,
    added: 1,
  },
  {
    name: 'one member changed deep inside a compact line',
    edit: (d) => {
      d.stream[0]!.input![0]!['port'] = 5001;
    },
    removed: 1,
    added: 1,
  },
  {
    name: 'one member added to a compact record',
    edit: (d) => {
      d.user[1]!['role'] = 'admin';
    },
    removed: 1,
    added: 1,
  },
  {
    name: 'one member set back to its default: removed (the file stays minimal)',
    edit: (d) => {
      d.stream[1]!['ott-hls'] = 0;
    },
    removed: 2,
    added: 1,
  },
  {
    name: 'one member added after the last one of a record over lines',
    edit: (d) => {
      d.stream[1]!['display-name'] = 'Sport';
    },
    removed: 1,
    added: 2,
  },
  {
    name: 'a record removed',
    edit: (d) => {
      d.user.splice(0, 1);
    },
    removed: 1,
    added: 0,
  },
  {
    name: 'a record added',
    edit: (d) => {
      d.user.push({ login: 'carol', password: 'x' });
    },
    removed: 1,
    added: 2,
  },
  {
    name: 'a record over several lines removed',
    edit: (d) => {
      d.stream.splice(1, 1);
    },
    removed: 6,
    added: 1,
  },
];

/** `git diff --numstat` of two texts: [added, removed] lines. */
async function gitDiff(dir: string, before: string, after: string): Promise<[number, number]> {
  const a = path.join(dir, 'a.json');
  const b = path.join(dir, 'b.json');
  writeFileSync(a, before);
  writeFileSync(b, after);
  let out: string;
  try {
    out = execFileSync('git', ['diff', '--no-index', '--numstat', a, b], { encoding: 'utf8' });
  } catch (err) {
    // exit 1: the files differ
    out = String((err as { stdout?: string }).stdout ?? '');
  }
  const [added, removed] = out.trim().split(/\s+/).map(Number);
  return [added ?? 0, removed ?? 0];
}

t.test('the hand-formatted file is valid and minimal', async (t) => {
  const loaded = loadConfigText(HAND);
  t.ok(deepEqual(elideDefaults(loaded.doc), loaded.doc));
  t.not(formatConfig(loaded.doc), HAND, 'and not laid out as the 2-space form');
});

for (const c of CASES) {
  t.test(c.name, async (t) => {
    const dir = await tempDir(t);
    const next = structuredClone(loadConfigText(HAND).doc) as unknown as Doc;
    c.edit(next);
    const minimal = elideDefaults(next as unknown as ConfigDocument);
    const text = formatConfigOver(HAND, minimal);
    const loaded = loadConfigText(text);
    t.same(loaded.doc, minimal, 'the text means the new minimal document');
    t.ok(deepEqual(elideDefaults(loaded.doc), loaded.doc), 'and is minimal');
    const [added, removed] = await gitDiff(dir, HAND, text);
    t.ok(added <= c.added && removed <= c.removed, `git diff: +${added} -${removed}`);
    const [fullAdded] = await gitDiff(dir, HAND, formatConfig(minimal));
    t.ok(fullAdded > added, `a rewrite in 2-space JSON would add ${fullAdded} lines`);
  });
}

t.test('new values take the style of their neighbours', async (t) => {
  const doc = loadConfigText(HAND).doc as unknown as Doc;
  const next = structuredClone(doc);
  next.user.push({ login: 'carol', password: 'x' });
  next.stream.push({ id: 3, 'stream-name': 'movies', input: [{ type: 'udp', port: 5003 }] });
  const text = formatConfigOver(HAND, next as unknown as ConfigDocument);
  t.match(
    text,
    '\t  { "login":"bob","password":"pw2" },\n\t  { "login":"carol","password":"x" }\n',
  );
  t.match(
    text,
    '    },\n    {\n       "id": 3,\n       "stream-name": "movies",\n       "input": [\n',
    'a record beside a record over lines is laid out like it',
  );
});

t.test('edge cases: empty, invalid, BOM, escapes, __proto__, emptied containers', async (t) => {
  t.equal(formatConfigOver('', { a: 1 }), formatConfig({ a: 1 }), 'no text: written afresh');
  t.equal(formatConfigOver('{ "a": ', { a: 1 }), formatConfig({ a: 1 }), 'not JSON: afresh');
  t.equal(editJsonText('{"a": [1, 2]}', []), '[]', 'the root replaced');
  t.equal(editJsonText('\ufeff{"a": 1}\n', { a: 2 }), '\ufeff{"a": 2}\n', 'a BOM is kept');
  t.equal(
    editJsonText('{"\\u0061": 1.0, "b": "\\u0041"}', { a: 1, b: 'A', c: true }),
    '{"\\u0061": 1.0, "b": "\\u0041", "c": true}',
    'unchanged spellings are kept',
  );
  const proto = JSON.parse('{"__proto__": {"x": 1}}');
  t.equal(editJsonText('{"__proto__": {"x": 0}}', proto), '{"__proto__": {"x": 1}}');
  t.equal(editJsonText('{\n  "a": [\n    1\n  ]\n}', { a: [] }), '{\n  "a": []\n}');
  t.equal(editJsonText('{\n  "a": []\n}', { a: [1, 2] }), '{\n  "a": [1, 2]\n}');
  t.equal(editJsonText('{\n}', { a: 1 }), '{\n  "a": 1\n}');
  t.equal(editJsonText('{"a": 1, "b": 2}', { b: 2, a: 1 }), '{"a": 1, "b": 2}', 'order alone');
  t.equal(editJsonText('{"a": 1, "b": 2}', { z: 0, b: 3 }), '{"z": 0, "b": 3}');
  t.equal(editJsonText('[1, 2, 3, 4]', [1, 3, 4, 5]), '[1, 3, 4, 5]');
});

t.test('records are paired by identity, so a change among many stays on its line', async (t) => {
  const streams = Array.from({ length: 300 }, (_, k) => ({ id: k + 1, 'stream-name': `s${k}` }));
  const text = `{"stream": [\n${streams.map((s) => `  ${JSON.stringify(s)}`).join(',\n')}\n]}\n`;
  const next = structuredClone(streams);
  next.reverse();
  next[10]!['stream-name'] = 'renamed';
  const edited = editJsonText(text, { stream: next })!;
  t.same(JSON.parse(edited), { stream: next });
  const plain = structuredClone(streams);
  plain[150]!['stream-name'] = 'renamed';
  const one = editJsonText(text, { stream: plain })!;
  t.equal(
    one.split('\n').filter((l, k) => l !== text.split('\n')[k]).length,
    1,
    'one changed line among 300 records',
  );
});

t.test('random documents and edits: the editor itself is right (never the fallback)', async (t) => {
  let seed = 14;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const scalar = () => [0, 1, 'a', 'b"c', true, null, 2.5][rand(7)];
  const value = (depth: number): unknown => {
    const r = rand(depth > 2 ? 1 : 4);
    if (r === 1) return Array.from({ length: rand(4) }, () => value(depth + 1));
    if (r >= 2) {
      const o: Record<string, unknown> = {};
      for (let k = rand(4); k > 0; k--) o[`k${rand(6)}`] = value(depth + 1);
      return o;
    }
    return scalar();
  };
  const mutate = (v: unknown, depth: number): unknown => {
    if (Array.isArray(v)) {
      const out = [...v];
      const r = rand(4);
      if (r === 0 && out.length > 0) out.splice(rand(out.length), 1);
      else if (r === 1) out.splice(rand(out.length + 1), 0, value(depth + 1));
      else if (out.length > 0) {
        const k = rand(out.length);
        out[k] = mutate(out[k], depth + 1);
      }
      return out;
    }
    if (v !== null && typeof v === 'object') {
      const out = { ...(v as Record<string, unknown>) };
      const keys = Object.keys(out);
      const r = rand(4);
      if (r === 0 && keys.length > 0) delete out[keys[rand(keys.length)]!];
      else if (r === 1) out[`n${rand(6)}`] = value(depth + 1);
      else if (keys.length > 0) {
        const k = keys[rand(keys.length)]!;
        out[k] = mutate(out[k], depth + 1);
      }
      return out;
    }
    return rand(2) ? scalar() : value(depth);
  };
  const layouts = [
    (d: unknown) => JSON.stringify(d, null, 2),
    (d: unknown) => JSON.stringify(d),
    (d: unknown) => JSON.stringify(d, null, '\t'),
    (d: unknown) => JSON.stringify(d, null, 1).replace(/\n {2}/g, '\n\t '),
  ];
  let fallbacks = 0;
  for (let run = 0; run < 2000; run++) {
    const doc = { root: value(0), list: [value(1), value(1)] };
    const text = layouts[run % layouts.length]!(doc);
    let next: unknown = doc;
    for (let k = 1 + rand(3); k > 0; k--) next = mutate(next, 0);
    const edited = editJsonText(text, next);
    if (edited === undefined || !deepEqual(JSON.parse(edited), next)) fallbacks++;
  }
  t.equal(fallbacks, 0, '2000 random edits, every one edited in place');
});
