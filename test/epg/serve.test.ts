// End to end through the real server (`bin/sluice.js serve`): an EPG source (local XMLTV file),
// an EPG server with a channel set and a login, a stream bound to a channel of that source.
// The JSON day on the admin port and /xmltv on the EPG port (curl --digest from 127.0.0.2) show
// the guide limited to the login's channel set; a PATCH of the source URL through the admin API
// refreshes the guide; deleting the login gives 401.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { curl } from '../helpers/epg-curl.ts';
import { freePort, startServer, tempDir, waitFor } from '../helpers/server.ts';

const HOUR = 3600;
const IMPORT_TIMEOUT_MS = 20_000;

/** XMLTV stamp in UTC. */
function stamp(sec: number): string {
  return `${new Date(sec * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14)} +0000`;
}

/** Programme i of every channel covers [DAY_START + i * 12 h, + 12 h) of today (UTC). */
const HALF_DAY = 12 * HOUR;
function dayStart(now: number): number {
  return now - (now % (24 * HOUR));
}

/** A guide with channels a/b/c.example, each with two programmes filling today's UTC day
 *  (the JSON day of `t = now` holds both; /xmltv those not ended yet). */
function guide(titlePrefix: string, now: number): string {
  const start = dayStart(now);
  let xml = '<?xml version="1.0" encoding="UTF-8"?>\n<tv>\n';
  for (const c of ['a', 'b', 'c']) {
    xml += `<channel id="${c}.example"><display-name lang="en">${c.toUpperCase()}</display-name></channel>\n`;
  }
  for (const c of ['a', 'b', 'c']) {
    for (let i = 0; i < 2; i++) {
      const s = start + i * HALF_DAY;
      xml += `<programme start="${stamp(s)}" stop="${stamp(s + HALF_DAY)}" channel="${c}.example"><title lang="en">${titlePrefix} ${c} ${i}</title><desc lang="en">About ${c} ${i}.</desc></programme>\n`;
    }
  }
  return `${xml}</tv>\n`;
}

interface DayBody {
  event: { start: number; end: number; title: string; desc: string }[];
}

t.test('EPG end to end through bin/sluice.js serve', async (t) => {
  const dir = await tempDir(t, 'sluice-epg-serve-');
  const now = Math.floor(Date.now() / 1000);
  const guideA = join(dir, 'guide-a.xml');
  const guideB = join(dir, 'guide-b.xml');
  writeFileSync(guideA, guide('Morning', now));
  writeFileSync(guideB, guide('Evening', now));
  const udpPort = await freePort();
  const srv = await startServer(t, {
    config: {
      epg: { source: [{ id: 1, name: 'guide', source: guideA, enable: true }] },
      'epg-server': {
        'channel-set': [{ id: 1, name: 'basic' }],
        login: [{ id: 1, login: 'box', password: 'box-pass', 'channel-set': 1 }],
      },
      stream: [
        {
          id: 1,
          'stream-name': 'one',
          input: [{ type: 'udp', port: udpPort, 'bind-if': '127.0.0.1' }],
          'epg-source': 1,
          'epg-channel': 'a.example',
          'epg-channel-set': [1],
        },
      ],
    },
  });
  const written = JSON.parse(readFileSync(srv.configPath!, 'utf8'));
  const epgBase = `http://127.0.0.1:${written['epg-server'].port}`;
  const day = async (ch: string) => {
    const r = await fetch(`${srv.url}/data/epg/channel?src=1&ch=${ch}&t=${now}`);
    const body = (await r.json()) as DayBody;
    return { status: r.status, type: r.headers.get('content-type'), body };
  };
  const titles = (b: DayBody) => b.event.map((e) => e.title).sort();

  const first = await waitFor(
    'the first import on /data/epg/channel',
    async () => {
      const d = await day('a.example');
      return d.body.event.length > 0 ? d : undefined;
    },
    IMPORT_TIMEOUT_MS,
  );
  t.equal(first.status, 200);
  t.match(first.type, /^application\/json/);
  t.same(titles(first.body), ['Morning a 0', 'Morning a 1'], 'JSON day of a.example');
  t.same(titles((await day('b.example')).body), ['Morning b 0', 'Morning b 1'], 'JSON has b too');

  const away = ['--interface', '127.0.0.2'];
  const xmltv = () => curl([...away, '--digest', '-u', 'box:box-pass', `${epgBase}/xmltv`]);
  const x1 = await xmltv();
  t.equal(x1.status, 200, 'digest login answered');
  t.match(x1.headers['content-type'], /^text\/xml/);
  const doc1 = x1.body.toString();
  t.match(doc1, /<channel id="a\.example">/, 'the bound channel is listed');
  t.match(doc1, /Morning a 1/);
  t.notMatch(doc1, /b\.example|c\.example/, 'channels outside the set are not');
  const notEnded = [0, 1].filter((i) => dayStart(now) + (i + 1) * HALF_DAY >= now).length;
  t.equal((doc1.match(/<programme /g) ?? []).length, notEnded, 'the programmes not ended yet');

  const patch = await fetch(`${srv.url}/config/epg-source/1`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ source: guideB }),
  });
  const patchBody = await patch.text();
  t.equal(patch.status, 200, 'PATCH of the source URL applied');
  t.match(patchBody, /"action":"update"/, 'an update in place of the source');
  const after = await waitFor(
    'the refresh after the PATCH',
    async () => {
      const d = await day('a.example');
      return titles(d.body)[0]?.startsWith('Evening') ? d : undefined;
    },
    IMPORT_TIMEOUT_MS,
  );
  t.same(titles(after.body), ['Evening a 0', 'Evening a 1'], 'JSON day refreshed');
  const doc2 = (await xmltv()).body.toString();
  t.match(doc2, /Evening a 1/, 'XMLTV rebuilt after the refresh');
  t.notMatch(doc2, /Morning/);
  t.notMatch(doc2, /b\.example/);

  const del = await fetch(`${srv.url}/config/epg-login/1`, { method: 'DELETE' });
  t.ok(del.status === 200 || del.status === 204, `DELETE of the login: ${del.status}`);
  const gone = await waitFor('the login removed', async () => {
    const r = await xmltv();
    return r.status === 401 ? r : undefined;
  });
  t.equal(gone.status, 401, 'deleted login gets 401');
  t.match(gone.headers['www-authenticate'], /Digest/);
  t.same(JSON.parse(gone.body.toString()), { status: 401, message: 'Unauthorized' });
});
