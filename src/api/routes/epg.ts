// Admin-server routes of the EPG (a Fastify plugin in the api's plugin list): the per-channel
// JSON day, XMLTV cache reset, forced source refresh and its status, read-only SQL, languages.
import type { FastifyPluginAsync } from 'fastify';
import {
  type ChannelQuery,
  channelDay,
  EMPTY_BODY,
  singleValues,
} from '../../epg/channel-endpoint.ts';
import { LANGUAGES } from '../../epg/languages.ts';
import { EPG_SERVICE, type EpgRuntime } from '../../epg/runtime.ts';
import { runReadOnlySql, SQL_MAX_MS, SQL_MAX_ROWS } from '../../epg/sql.ts';
import { HttpError } from '../../errors.ts';
import type { Services } from '../../util/services.ts';

const NO_CACHE_HEADERS = {
  'cache-control': 'no-cache, no-store, must-revalidate',
  pragma: 'no-cache',
  expires: '0',
};
const UNSIGNED = /^\d+$/;

export interface EpgRoutesOptions {
  ctx?: { services: Services };
  /** Direct runtime (tests); otherwise looked up in ctx.services on every request. */
  epg?: () => EpgRuntime | undefined;
}

function sourceParam(v: string | undefined, name = 's'): number {
  if (v === undefined || !UNSIGNED.test(v)) {
    throw new HttpError('BAD_REQUEST', `${name} must be an unsigned integer`);
  }
  return Number(v);
}

export const epgRoutes: FastifyPluginAsync<EpgRoutesOptions> = async (app, opts) => {
  const runtime = (): EpgRuntime | undefined => opts.epg?.() ?? opts.ctx?.services.get(EPG_SERVICE);
  const need = (): EpgRuntime => {
    const rt = runtime();
    if (!rt) throw new HttpError('UNAVAILABLE', 'the EPG is not running');
    return rt;
  };

  app.get('/data/epg/channel', async (req, reply) => {
    const rt = runtime();
    const q = req.query as ChannelQuery;
    // Set before the checks: a 400 is not to be cached by a proxy either (rule 7).
    reply.headers(NO_CACHE_HEADERS);
    // Parameter checks run even without a runtime so the 400 cases stay the same.
    const body = rt ? channelDay(rt, q) : checkOnly(q);
    return reply.type('application/json').send(body);
  });

  app.post('/xmltv/reset-cache', async () => {
    runtime()?.resetXmltvCache();
    return { status: 200, message: 'XMLTV cache flushed' };
  });

  app.post('/data/epg/update', async (req, reply) => {
    const rt = need();
    const s = sourceParam((req.query as Record<string, string>)['s']);
    const refresh = rt.refreshers.get(s);
    if (!refresh) throw new HttpError('NOT_FOUND', `no external EPG source ${s}`);
    const r = refresh();
    return reply.code(202).send({
      status: 202,
      message: r.queued ? 'refresh queued' : `refresh not queued (${r.state})`,
      source: s,
      state: r.state,
      statusUrl: `/data/epg/source?s=${s}`,
    });
  });

  app.get('/data/epg/source', async (req) => {
    const rt = need();
    const sv = (req.query as Record<string, string>)['s'];
    const list = [...rt.sourceStatus.entries()].map(([id, st]) => ({ id, ...st() }));
    const eit = rt.sourceStatus.has(0) ? [] : [{ id: 0, state: rt.source(0) ? 'ready' : 'idle' }];
    const all = [...eit, ...list].sort((a, b) => a.id - b.id);
    if (sv === undefined) return { source: all };
    const s = sourceParam(sv);
    const one = all.find((x) => x.id === s);
    if (!one) throw new HttpError('NOT_FOUND', `no EPG source ${s}`);
    return one;
  });

  app.post('/data/epg/sql', async (req) => {
    const rt = need();
    const s = sourceParam((req.query as Record<string, string>)['s']);
    // JSON only: a text/plain query is refused before it gets here (../csrf.ts).
    const sql = (req.body as { sql?: unknown } | undefined)?.sql;
    if (typeof sql !== 'string' || !sql) {
      throw new HttpError('BAD_REQUEST', 'send the query as JSON: {"sql": "SELECT ..."}');
    }
    if (!rt.source(s)) throw new HttpError('NOT_FOUND', `no EPG source ${s}`);
    return runReadOnlySql(rt.sourcePath(s), sql, { maxRows: SQL_MAX_ROWS, maxMs: SQL_MAX_MS });
  });

  app.get('/schema/lang', async () => ({
    lang: LANGUAGES.map((l) => ({
      id: l.id,
      'iso639-1': l.iso1,
      'iso639-2': l.iso2b,
      'iso639-2t': l.iso2t,
      name: l.name,
    })),
  }));
};

/** Validate like channelDay when no runtime exists (unknown source → empty). */
function checkOnly(query: ChannelQuery): string {
  const q = singleValues(query);
  if (!q.ch) throw new HttpError('BAD_REQUEST', 'ch is required');
  for (const k of ['src', 't'] as const) {
    const v = q[k];
    if (v !== undefined && !UNSIGNED.test(v)) {
      throw new HttpError('BAD_REQUEST', `${k} must be an unsigned integer`);
    }
  }
  if (
    q.lang &&
    /^[+-]?[\d.]+$/.test(q.lang) &&
    !(UNSIGNED.test(q.lang) && Number(q.lang) <= LANGUAGES.length)
  ) {
    throw new HttpError('BAD_REQUEST', `unknown language id ${q.lang}`);
  }
  return EMPTY_BODY;
}
