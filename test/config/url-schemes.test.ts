// URL members take only the schemes their record can open (schema `x-url`, src/config/
// url-rule.ts): each wrong one is refused by `sluice validate` and by API edits (PUT and PATCH of
// /config), naming its pointer, the value's scheme and what is accepted; the right forms pass.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { runCli, startServer, tempDir } from '../helpers/server.ts';

type Section = 'input' | 'cs' | 'epg' | 'alerter';

interface Row {
  what: string;
  section: Section;
  /** The record around the member (its other required members). */
  record: Record<string, unknown>;
  member: string;
  value: string;
  /** For a wrong value: the words of what it got ("scheme file:", "no scheme"). */
  got?: string;
  /** For a wrong value: the accepted schemes as the message lists them. */
  accepts?: string;
}

const HTTP = 'http:// or https://';
const EPG = 'a file path or a URL of scheme file:, http:// or https://';
const hls = { type: 'hls' };
const rtsp = { type: 'rtsp', transport: 2 };
const rtmp = { type: 'rtmp' };
const billing = { password: 'secret' };
const epg = {};

const WRONG: Row[] = [
  {
    what: 'hls file:',
    section: 'input',
    record: hls,
    member: 'uri',
    value: 'file:///etc/passwd',
    got: 'scheme file:',
    accepts: HTTP,
  },
  {
    what: 'hls without scheme',
    section: 'input',
    record: hls,
    member: 'uri',
    value: 'origin.example/live.m3u8',
    got: 'no scheme',
    accepts: HTTP,
  },
  {
    what: 'hls rtsp:',
    section: 'input',
    record: hls,
    member: 'uri',
    value: 'rtsp://cam.example/live',
    got: 'scheme rtsp:',
    accepts: HTTP,
  },
  {
    what: 'rtsp tunnelled, http:',
    section: 'input',
    record: rtsp,
    member: 'uri',
    value: 'http://cam.example/live',
    got: 'scheme http:',
    accepts: 'rtsp://',
  },
  {
    what: 'rtsp rtsps: (plain RTSP only)',
    section: 'input',
    record: rtsp,
    member: 'uri',
    value: 'rtsps://cam.example/live',
    got: 'scheme rtsps:',
    accepts: 'rtsp://',
  },
  {
    what: 'rtmp http:',
    section: 'input',
    record: rtmp,
    member: 'url',
    value: 'http://origin.example/app/key',
    got: 'scheme http:',
    accepts: 'rtmp:// or rtmps://',
  },
  {
    what: 'billing file:',
    section: 'cs',
    record: billing,
    member: 'url',
    value: 'file:///etc/shadow',
    got: 'scheme file:',
    accepts: HTTP,
  },
  {
    what: 'billing ftp:',
    section: 'cs',
    record: billing,
    member: 'url',
    value: 'ftp://billing.example/',
    got: 'scheme ftp:',
    accepts: HTTP,
  },
  {
    what: 'epg ftp:',
    section: 'epg',
    record: epg,
    member: 'source',
    value: 'ftp://guide.example/g.xml',
    got: 'scheme ftp:',
    accepts: EPG,
  },
  {
    what: 'epg data:',
    section: 'epg',
    record: epg,
    member: 'source',
    value: 'data:text/xml,<tv/>',
    got: 'scheme data:',
    accepts: EPG,
  },
  {
    what: 'webhook file:',
    section: 'alerter',
    record: {},
    member: 'webhook-url',
    value: 'file:///tmp/hook',
    got: 'scheme file:',
    accepts: HTTP,
  },
];

const RIGHT: Row[] = [
  {
    what: 'hls https: in capitals',
    section: 'input',
    record: hls,
    member: 'uri',
    value: 'HTTPS://origin.example/live.m3u8',
  },
  {
    what: 'rtsp tunnelled, rtsp:',
    section: 'input',
    record: rtsp,
    member: 'uri',
    value: 'rtsp://cam.example:8554/live',
  },
  {
    what: 'rtmps pull',
    section: 'input',
    record: rtmp,
    member: 'url',
    value: 'rtmps://origin.example/app/key',
  },
  {
    what: 'rtmp listener',
    section: 'input',
    record: rtmp,
    member: 'url',
    value: 'rtmp://@127.0.0.1:19350/live/key',
  },
  {
    what: 'billing https:',
    section: 'cs',
    record: billing,
    member: 'url',
    value: 'https://billing.example/auth',
  },
  {
    what: 'epg absolute path',
    section: 'epg',
    record: epg,
    member: 'source',
    value: '/var/lib/guide.xml',
  },
  {
    what: 'epg relative path',
    section: 'epg',
    record: epg,
    member: 'source',
    value: 'guides/guide.xml',
  },
  {
    what: 'epg file:',
    section: 'epg',
    record: epg,
    member: 'source',
    value: 'file:///var/lib/guide.xml',
  },
  {
    what: 'epg http:',
    section: 'epg',
    record: epg,
    member: 'source',
    value: 'http://guide.example/g.xml',
  },
  {
    what: 'webhook https:',
    section: 'alerter',
    record: {},
    member: 'webhook-url',
    value: 'https://hooks.example/in',
  },
];

/** One document holding every row (at most one alerter row), and each row's JSON pointer. */
function documentOf(rows: Row[]): { doc: Record<string, unknown>; pointers: string[] } {
  const stream: unknown[] = [];
  const server: unknown[] = [];
  const source: unknown[] = [];
  const doc: Record<string, unknown> = {};
  const pointers = rows.map((r) => {
    const rec = { ...r.record, [r.member]: r.value };
    if (r.section === 'input') {
      stream.push({
        id: stream.length + 1,
        'stream-name': `s${stream.length + 1}`,
        pause: true,
        input: [rec],
      });
      return `/stream/${stream.length - 1}/input/0/${r.member}`;
    }
    if (r.section === 'cs') {
      server.push({ id: server.length + 1, ...rec, name: `billing${server.length + 1}` });
      return `/cs/server/${server.length - 1}/${r.member}`;
    }
    if (r.section === 'epg') {
      source.push({ id: source.length + 1, ...rec, name: `guide${source.length + 1}` });
      return `/epg/source/${source.length - 1}/${r.member}`;
    }
    doc['alerter'] = rec;
    return `/alerter/${r.member}`;
  });
  if (stream.length) doc['stream'] = stream;
  if (server.length) doc['cs'] = { server };
  if (source.length) doc['epg'] = { source };
  return { doc, pointers };
}

/** The message a wrong row must get. */
function expected(r: Row): RegExp {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const accepts = r.accepts === EPG ? EPG : `a URL of scheme ${r.accepts}`;
  return new RegExp(`^${esc(r.member)} must be ${esc(accepts)}, got ${esc(r.got!)} \\(`);
}

interface Issue {
  pointer: string;
  rule: string;
  message: string;
}

/** Every wrong row is one url-scheme error at its pointer; nothing else is. */
function checkIssues(t: Test, issues: Issue[], rows: Row[], pointers: string[]): void {
  const urls = issues.filter((i) => i.rule === 'url-scheme');
  t.equal(urls.length, rows.length, 'one url-scheme error per wrong value, no more');
  rows.forEach((r, i) => {
    const issue = urls.find((u) => u.pointer === pointers[i]);
    t.match(issue?.message, expected(r), `${r.what}: ${pointers[i]}`);
  });
}

const dir = await tempDir(t);
const wrong = documentOf(WRONG);
const right = documentOf(RIGHT);

t.test(
  'sluice validate: each wrong URL an error at its pointer, the right ones pass',
  async (t) => {
    const bad = path.join(dir, 'wrong.json');
    await writeFile(bad, `${JSON.stringify(wrong.doc, null, 2)}\n`);
    const r = await runCli(['validate', bad]);
    t.equal(r.code, 1, 'refused');
    const issues = r.stderr
      .split('\n')
      .map((l) => /error \[([\w-]+)\] (\S+): (.*)$/.exec(l))
      .filter((m) => m !== null)
      .map((m) => ({ rule: m[1]!, pointer: m[2]!, message: m[3]! }));
    checkIssues(t, issues, WRONG, wrong.pointers);

    const good = path.join(dir, 'right.json');
    await writeFile(good, `${JSON.stringify(right.doc, null, 2)}\n`);
    const ok = await runCli(['validate', good]);
    t.equal(ok.code, 0, ok.stderr);
  },
);

t.test('PUT and PATCH /config: refused with the same errors, the config unchanged', async (t) => {
  const server = await startServer(t, { config: {} });
  const send = (method: string, body: unknown, query = '') =>
    fetch(`${server.url}/config${query}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const before = await (await fetch(`${server.url}/config`)).text();

  const { errors } = await (async () => {
    const current = JSON.parse(before) as Record<string, unknown>;
    const res = await send('PUT', { ...current, ...wrong.doc });
    t.equal(res.status, 400, 'PUT refused');
    return (await res.json()) as { errors: Issue[] };
  })();
  checkIssues(t, errors, WRONG, wrong.pointers);

  for (const r of WRONG) {
    const one = documentOf([r]);
    const res = await send('PATCH', one.doc);
    t.equal(res.status, 400, `PATCH ${r.what} refused`);
    checkIssues(t, ((await res.json()) as { errors: Issue[] }).errors, [r], one.pointers);
  }
  t.equal(await (await fetch(`${server.url}/config`)).text(), before, 'nothing was written');

  const dry = await send('PATCH', right.doc, '?dry-run=true');
  if (dry.status !== 200) t.comment(await dry.text());
  t.equal(dry.status, 200, 'the right forms pass');
});
