// GET /data/stream on the real server: pages (`limit`, `after`, `next`) return every stream
// exactly once, also when a stream is deleted between two pages; `name` and `ids` filter; the
// plain list keeps its shape and order; a bad query is refused in words.
import { readFile, writeFile } from 'node:fs/promises';
import t from 'tap';
import { startServer, waitFor } from '../helpers/server.ts';

const COUNT = 23;
const PAGE = 5;

/** Paused streams (no input opened) with ids 1..COUNT, `order` reversing the id order, and
 *  two with no id (keyed by name). */
function streams(skip = new Set<number>()): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let i = 1; i <= COUNT; i++) {
    if (!skip.has(i)) out.push({ id: i, 'stream-name': `ch${i}`, order: COUNT - i, pause: true });
  }
  out.push({ 'stream-name': 'news', pause: true }, { 'stream-name': 'sport-news', pause: true });
  return out;
}

type Page = { streams: { key: string; name: string }[]; next: string | null };

async function get<T>(url: string): Promise<{ status: number; body: T }> {
  const r = await fetch(url);
  return { status: r.status, body: (await r.json()) as T };
}

t.test('pages walk every stream exactly once; filters; the plain list', async (t) => {
  const srv = await startServer(t, { config: { stream: streams() } });
  const all = await waitFor('every stream to run', async () => {
    const { body } = await get<{ key: string; name: string }[]>(`${srv.url}/data/stream`);
    return body.length === COUNT + 2 ? body : undefined;
  });
  t.equal(all[0]!.name, `ch${COUNT}`, 'the plain list keeps its order: `order` first');

  const seen: string[] = [];
  let after: string | null = null;
  let pages = 0;
  do {
    const q: string = after ? `&after=${encodeURIComponent(after)}` : '';
    const { status, body } = await get<Page>(`${srv.url}/data/stream?limit=${PAGE}${q}`);
    t.equal(status, 200);
    t.ok(body.streams.length <= PAGE, 'no page is longer than the limit');
    seen.push(...body.streams.map((s) => s.key));
    after = body.next;
    pages++;
  } while (after !== null && pages < 20);
  t.equal(pages, Math.ceil((COUNT + 2) / PAGE), 'as many pages as needed, the last says null');
  t.same([...seen].sort(), all.map((s) => s.key).sort(), 'every stream once');
  t.equal(new Set(seen).size, seen.length, 'none twice');
  t.same(seen.slice(0, 3), ['1', '2', '3'], 'pages walk by resource key');
  t.same(seen.slice(-2), ['name:news', 'name:sport-news'], 'streams without id come last');

  const byName = await get<{ name: string }[]>(`${srv.url}/data/stream?name=NEWS`);
  t.same(byName.body.map((s) => s.name).sort(), ['news', 'sport-news'], 'name: a part, any case');
  const byIds = await get<{ name: string }[]>(`${srv.url}/data/stream?ids=3,17,999`);
  t.same(byIds.body.map((s) => s.name).sort(), ['ch17', 'ch3'], 'ids: those that run');
  const both = await get<Page>(`${srv.url}/data/stream?ids=1,2,3,4&limit=3`);
  t.same(
    both.body.streams.map((s) => s.key),
    ['1', '2', '3'],
    'filters and a page together',
  );
  t.equal(both.body.next, '3');

  const bad = await get<{ errors: { message: string }[] }>(`${srv.url}/data/stream?ids=1;2`);
  t.equal(bad.status, 400, 'a malformed ids list is refused');
  const why = bad.body.errors.map((e) => e.message).join('; ');
  t.match(why, /querystring\/ids/, `the answer names the parameter: ${why}`);
  const big = await get<{ message: string }>(`${srv.url}/data/stream?limit=5000`);
  t.equal(big.status, 400, 'a limit over 1000 is refused');
});

t.test('a stream deleted between two pages moves no other stream across the pages', async (t) => {
  const srv = await startServer(t, { config: { stream: streams() } });
  await waitFor('every stream to run', async () => {
    const { body } = await get<unknown[]>(`${srv.url}/data/stream`);
    return body.length === COUNT + 2 ? true : undefined;
  });
  const first = await get<Page>(`${srv.url}/data/stream?limit=${PAGE}`);
  const last = first.body.next!;
  // Delete the page's last stream and one before it: the cursor still places the next page.
  const cfg = JSON.parse(await readFile(srv.configPath!, 'utf8')) as Record<string, unknown>;
  await writeFile(
    srv.configPath!,
    JSON.stringify({ ...cfg, stream: streams(new Set([2, Number(last)])) }),
  );
  await waitFor('the deletions to apply', async () => {
    const { body } = await get<unknown[]>(`${srv.url}/data/stream`);
    return body.length === COUNT ? true : undefined;
  });
  const second = await get<Page>(`${srv.url}/data/stream?limit=${PAGE}&after=${last}`);
  t.same(
    second.body.streams.map((s) => s.key),
    ['6', '7', '8', '9', '10'],
    'the next page starts right after the deleted cursor',
  );
});
