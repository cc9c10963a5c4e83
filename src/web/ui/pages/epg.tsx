// EPG grid: the streams bound to an EPG channel (/data/epg/streams) × a window of hours (3 to
// 24) in the viewer's local time, each programme a box as long as it lasts. The channel rows are
// a virtual list and only the channels in view have their days fetched, so a thousand channels
// or a day of five-minute programmes cost what the rows in view do. Earlier / later, Now, a
// line at the current time, a programme's description on a click (or Enter).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api.ts';
import {
  type Channel,
  DAY,
  daysOf,
  type Ev,
  GuideCache,
  HOUR,
  hm,
  localMidnight,
  ymd,
  zoneLabel,
} from '../epg-data.ts';
import { href } from '../router.ts';
import { VirtualList } from '../virtual-list.tsx';

const ROW_HEIGHT = 44;
/** Hours a window can show; the default keeps a dense guide's boxes readable. */
const SPANS = [3, 6, 12, 24];
const DEFAULT_SPAN = 6;

/** The window of `span` hours that holds `sec`, counted from local midnight. */
function windowAt(sec: number, span: number): number {
  const m = localMidnight(sec);
  return m + Math.floor((sec - m) / (span * HOUR)) * span * HOUR;
}

/** Hour marks across the window: every hour up to 6 h, then every 2 or 3. */
function marks(from: number, span: number): number[] {
  const step = (span <= 6 ? 1 : span <= 12 ? 2 : 3) * HOUR;
  return Array.from({ length: Math.ceil((span * HOUR) / step) }, (_, i) => from + i * step);
}

interface Picked {
  ch: string;
  ev: Ev;
}

function Track(props: {
  c: Channel;
  cache: GuideCache;
  from: number;
  to: number;
  now: number;
  picked: Picked | null;
  pick: (p: Picked | null) => void;
}) {
  const { c, cache, from, to, now, picked, pick } = props;
  const span = to - from;
  const events = cache.events(c, from, to);
  return (
    <span class="epg-track">
      {now >= from && now < to ? (
        <span class="epg-now" style={{ left: `${((now - from) / span) * 100}%` }} />
      ) : null}
      {events === null ? <small class="muted">loading…</small> : null}
      {events && !Array.isArray(events) ? <small class="muted">{events.error}</small> : null}
      {Array.isArray(events) && events.length === 0 ? (
        <small class="muted">No programmes in these hours.</small>
      ) : null}
      {Array.isArray(events)
        ? events.map((e) => {
            const a = Math.max(e.start, from);
            const b = Math.min(e.end, to);
            const on = picked?.ch === c.key && picked.ev.start === e.start;
            return (
              <button
                type="button"
                key={e.start}
                class={`epg-ev${on ? ' on' : ''}${e.start <= now && now < e.end ? ' live' : ''}`}
                data-testid="epg-event"
                style={{
                  left: `${((a - from) / span) * 100}%`,
                  width: `${(Math.max(0, b - a) / span) * 100}%`,
                }}
                title={`${hm(e.start)}–${hm(e.end)} ${e.title}`}
                aria-label={`${e.title}, ${hm(e.start)} to ${hm(e.end)}`}
                aria-pressed={on}
                onClick={() => pick(on ? null : { ch: c.key, ev: e })}
              >
                {e.title}
              </button>
            );
          })
        : null}
    </span>
  );
}

export function EpgPage() {
  const [span, setSpan] = useState(DEFAULT_SPAN);
  const [from, setFrom] = useState(() => windowAt(Date.now() / 1000, DEFAULT_SPAN));
  const [list, setList] = useState<Channel[] | null>(null);
  const [error, setError] = useState('');
  const [picked, setPicked] = useState<Picked | null>(null);
  const [, setTick] = useState(0);
  const cache = useMemo(() => new GuideCache(() => setTick((x) => x + 1)), []);
  useEffect(() => () => cache.close(), []);
  const to = from + span * HOUR;

  useEffect(() => {
    api<{ streams: Channel[] }>('/data/epg/streams')
      .then((r) => setList(r.body.streams))
      .catch((e: Error) => setError(e.message));
  }, []);

  // The rows the list draws; their days are what is fetched.
  const range = useRef<[number, number]>([0, 0]);
  const load = () => {
    if (list) cache.load(list.slice(...range.current), daysOf(from, to));
  };
  useEffect(load, [from, to, list]);
  useEffect(() => setPicked(null), [from, to]);

  const now = Date.now() / 1000;
  const move = (n: number) => setFrom(from + n * span * HOUR);
  return (
    <section class="page epg" aria-labelledby="epg-h">
      <div class="toolbar">
        <h1 id="epg-h">EPG</h1>
        <button type="button" onClick={() => move(-1)} aria-label="Earlier">
          ◀
        </button>
        <span data-testid="epg-day">
          {ymd(from)} {hm(from)}–{hm(to)}
          {to - from >= DAY || ymd(to - 1) !== ymd(from) ? ` (to ${ymd(to - 1)})` : ''}
        </span>
        <button type="button" onClick={() => move(1)} aria-label="Later">
          ▶
        </button>
        <button type="button" onClick={() => setFrom(windowAt(Date.now() / 1000, span))}>
          Now
        </button>
        <label>
          Hours shown{' '}
          <select
            value={span}
            onChange={(e) => {
              const next = Number((e.currentTarget as HTMLSelectElement).value);
              setSpan(next);
              setFrom(windowAt(from, next));
            }}
          >
            {SPANS.map((h) => (
              <option key={h} value={h}>
                {h} h
              </option>
            ))}
          </select>
        </label>
        <small class="muted" data-testid="epg-zone">
          Times in {zoneLabel(from)}
        </small>
        {list ? (
          <span class="count" data-count={list.length}>
            {list.length} channel{list.length === 1 ? '' : 's'}
          </span>
        ) : null}
      </div>
      {error ? <p class="error">{error}</p> : null}
      {list && list.length === 0 ? (
        <p class="muted">No stream is bound to an EPG channel (epg-source, epg-channel).</p>
      ) : null}
      <div class="epg-row epg-hours" aria-hidden="true">
        <span class="epg-ch" />
        <span class="epg-track">
          {marks(from, span).map((m) => (
            <span key={m} class="epg-hour" style={{ left: `${((m - from) / (to - from)) * 100}%` }}>
              {hm(m)}
            </span>
          ))}
        </span>
      </div>
      <VirtualList
        items={list ?? []}
        rowHeight={ROW_HEIGHT}
        keyOf={(c) => c.key}
        label={`Programmes from ${ymd(from)} ${hm(from)} to ${hm(to)} by channel`}
        onRange={(a, b) => {
          range.current = [a, b];
          load();
        }}
        render={(c) => (
          <div class="epg-row" data-channel={c.name}>
            <span class="epg-ch">
              <a href={href('epg', c.key)} title="The channel's week">
                {c.title || c.name}
              </a>
              <small class="muted"> {c.channel}</small>
            </span>
            <Track
              c={c}
              cache={cache}
              from={from}
              to={to}
              now={now}
              picked={picked}
              pick={setPicked}
            />
          </div>
        )}
      />
      {picked ? (
        <section class="epg-detail" data-testid="epg-detail" aria-label="Programme">
          <h2>
            {hm(picked.ev.start)}–{hm(picked.ev.end)} {picked.ev.title}
          </h2>
          <p>{picked.ev.desc || <span class="muted">No description.</span>}</p>
        </section>
      ) : null}
    </section>
  );
}
