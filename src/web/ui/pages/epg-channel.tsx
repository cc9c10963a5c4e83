// One channel's guide for the week from today (local time): every programme a row of a virtual
// list, so a week of five-minute programmes (2,000 and more) draws only the rows in view; the
// list opens at the programme on air; a click (or Enter) shows its description.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from '../api.ts';
import {
  type Channel,
  DAY,
  dayName,
  daysOf,
  type Ev,
  GuideCache,
  hm,
  localMidnight,
  zoneLabel,
} from '../epg-data.ts';
import { href } from '../router.ts';
import { VirtualList } from '../virtual-list.tsx';

const ROW_HEIGHT = 36;
const WEEK_DAYS = 7;

export function EpgChannelPage({ id }: { id: string }) {
  const [c, setC] = useState<Channel | null>(null);
  const [error, setError] = useState('');
  const [picked, setPicked] = useState<Ev | null>(null);
  const [, setTick] = useState(0);
  const cache = useMemo(() => new GuideCache(() => setTick((x) => x + 1)), []);
  useEffect(() => () => cache.close(), []);
  const from = useMemo(() => localMidnight(Date.now() / 1000), []);
  const to = from + WEEK_DAYS * DAY;

  useEffect(() => {
    api<{ streams: Channel[] }>('/data/epg/streams')
      .then((r) => {
        const found = r.body.streams.find((s) => s.key === id);
        if (!found) throw new Error(`stream ${id} is not running or has no EPG channel`);
        setC(found);
        cache.load([found], daysOf(from, to));
      })
      .catch((e: Error) => setError(e.message));
  }, [id]);

  const got = c ? cache.events(c, from, to) : null;
  const events = Array.isArray(got) ? got : [];
  const now = Date.now() / 1000;
  const onAir = useMemo(() => events.findIndex((e) => e.end > now), [events.length]);
  return (
    <section class="page epg" aria-labelledby="epgc-h">
      <div class="toolbar">
        <a href={href('epg')}>← EPG</a>
        <h1 id="epgc-h">{c ? c.title || c.name : id}</h1>
        {c ? (
          <>
            <small class="muted">
              {c.channel} · <a href={href('stream', c.key)}>stream</a>
            </small>
            <span class="count" data-testid="epg-count" data-count={events.length}>
              {got === null ? 'loading…' : `${events.length} programmes in 7 days`}
            </span>
          </>
        ) : null}
        <small class="muted" data-testid="epg-zone">
          Times in {zoneLabel(from)}
        </small>
      </div>
      {error ? <p class="error">{error}</p> : null}
      {got && !Array.isArray(got) ? <p class="error">{got.error}</p> : null}
      {Array.isArray(got) && events.length === 0 ? (
        <p class="muted">No programmes this week.</p>
      ) : null}
      <VirtualList
        items={events}
        rowHeight={ROW_HEIGHT}
        keyOf={(e) => String(e.start)}
        label="Programmes"
        reveal={onAir}
        render={(e) => {
          const live = e.start <= now && now < e.end;
          return (
            <button
              type="button"
              class={`epg-item${live ? ' live' : ''}${picked === e ? ' on' : ''}`}
              data-testid="epg-item"
              aria-pressed={picked === e}
              onClick={() => setPicked(picked === e ? null : e)}
            >
              <span class="epg-when">
                {dayName(e.start)} {hm(e.start)}–{hm(e.end)}
              </span>
              <span class="epg-title">{e.title}</span>
            </button>
          );
        }}
      />
      {picked ? (
        <section class="epg-detail" data-testid="epg-detail" aria-label="Programme">
          <h2>
            {dayName(picked.start)} {hm(picked.start)}–{hm(picked.end)} {picked.title}
          </h2>
          <p>{picked.desc || <span class="muted">No description.</span>}</p>
        </section>
      ) : null}
    </section>
  );
}
