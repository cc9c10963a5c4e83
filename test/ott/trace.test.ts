// The stream's verbose logs: `ott-http-trace` writes a line per playback request (credentials
// masked; every request, none answered past the log by the native engine), `mpegts-trace` the
// analysis of each input (the programme table when it appears or changes, error counters as
// they grow).
import t from 'tap';
import { liveTsConfig } from '../helpers/ott.ts';
import { startServer, waitFor } from '../helpers/server.ts';

interface Line {
  msg: string;
  stream?: string;
  url?: string;
  status?: number;
  bytes?: number;
  programs?: { pnr: number; streams: string[] }[];
}

function lines(out: string): Line[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

t.test('ott-http-trace and mpegts-trace', async (t) => {
  const config = liveTsConfig();
  const stream = (config.stream as Record<string, unknown>[])[0]!;
  stream['ott-http-trace'] = true;
  stream['mpegts-trace'] = true;
  const srv = await startServer(t, { config, env: { SLUICE_LOG_LEVEL: 'info' } });
  const playlist = await waitFor('the playlist', async () => {
    const r = await fetch(`${srv.url}/live/index.m3u8`);
    const text = await r.text();
    return r.status === 200 && text.includes('seg-') ? text : undefined;
  });
  const seg = playlist.split('\n').find((l) => l.startsWith('seg-'))!;
  const body = await (
    await fetch(`${srv.url}/live/${seg}?token=secret1&password=secret2`)
  ).arrayBuffer();
  await (await fetch(`${srv.url}/live/${seg}`)).arrayBuffer();
  const traced = await waitFor('the requests in the log', () => {
    const http = lines(srv.output()).filter((l) => l.msg === 'ott http');
    return http.filter((l) => l.url?.includes(seg)).length >= 2 ? http : undefined;
  });
  const first = traced.find((l) => l.url?.includes('token='))!;
  t.equal(first.stream, 'live');
  t.equal(first.status, 200);
  t.ok(first.bytes! >= body.byteLength, `${first.bytes} bytes counted`);
  t.match(first.url, /token=sha256:[0-9a-f]{12}&password=\*\*\*/, 'credentials masked');
  t.notMatch(srv.output(), /secret1|secret2/, 'never written');
  t.ok(
    traced.some((l) => l.url === `/live/${seg}`),
    'a plain segment request is logged too (not answered past the log)',
  );

  const table = lines(srv.output()).filter((l) => l.msg.startsWith('mpegts: '));
  t.equal(table[0]?.msg, 'mpegts: analysis started', 'mpegts-trace: the analysis start');
  const found = table.find((l) => (l.programs?.length ?? 0) > 0);
  t.equal(found?.msg, 'mpegts: programme table changed', 'then the programme table');
  t.match(found?.programs?.[0]?.streams, [/^\d+:h264$/]);
});
