// EPG browser: the streams bound to an EPG channel (/data/epg/streams) × the hours of one UTC day
// (the day of GET /data/epg/channel), each programme a box as long as it lasts. Previous / next
// day, a line at the current time, a programme's description on a click (or Enter).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { href } from '../router.ts';

interface Channel {
  key: string;
  name: string;
  title: string;
  source: number;
  channel: string;
}
interface Ev {
  start: number;
  end: number;
  title: string;
  desc: string;
}
type Row = Channel & { events: Ev[] | null; error?: string };

const DAY = 86_400;
/** Channel days fetched at once. */
const PARALLEL = 6;

const utcDay = (sec: number) => sec - (sec % DAY);
const hm = (sec: number) => new Date(sec * 1000).toISOString().slice(11, 16);
const dateOf = (day: number) => new Date(day * 1000).toISOString().slice(0, 10);

/** Run `fn` over `items`, at most `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
}

export function EpgPage() {
  const [day, setDay] = useState(() => utcDay(Math.floor(Date.now() / 1000)));
  const [rows, setRows] = useState<Row[] | null>(null);
  const [error, setError] = useState('');
  const [picked, setPicked] = useState<{ ch: string; ev: Ev } | null>(null);

  useEffect(() => {
    let gone = false;
    setPicked(null);
    void (async () => {
      try {
        const list = (await api<{ streams: Channel[] }>('/data/epg/streams')).body.streams;
        const out: Row[] = list.map((c) => ({ ...c, events: null }));
        if (!gone) setRows(out);
        await pool(out, PARALLEL, async (r) => {
          try {
            const q = `src=${r.source}&ch=${encodeURIComponent(r.channel)}&t=${day + DAY / 2}`;
            const b = (await api<{ event?: Ev[] } | null>(`/data/epg/channel?${q}`)).body;
            // The order of the events is not guaranteed (spec 2).
            r.events = (b?.event ?? []).slice().sort((a, c) => a.start - c.start);
          } catch (e) {
            r.events = [];
            r.error = (e as Error).message;
          }
          if (!gone) setRows([...out]);
        });
      } catch (e) {
        if (!gone) setError((e as Error).message);
      }
    })();
    return () => {
      gone = true;
    };
  }, [day]);

  const now = Date.now() / 1000;
  const nowPct = now >= day && now < day + DAY ? ((now - day) / DAY) * 100 : null;
  return (
    <section class="page epg" aria-labelledby="epg-h">
      <div class="toolbar">
        <h1 id="epg-h">EPG</h1>
        <button type="button" onClick={() => setDay(day - DAY)} aria-label="Previous day">
          ◀
        </button>
        <span data-testid="epg-day">{dateOf(day)} (UTC)</span>
        <button type="button" onClick={() => setDay(day + DAY)} aria-label="Next day">
          ▶
        </button>
        <button type="button" onClick={() => setDay(utcDay(Math.floor(Date.now() / 1000)))}>
          Today
        </button>
      </div>
      {error ? <p class="error">{error}</p> : null}
      {rows && rows.length === 0 ? (
        <p class="muted">No stream is bound to an EPG channel (epg-source, epg-channel).</p>
      ) : null}
      <div class="epg-grid">
        <div class="epg-row epg-hours" aria-hidden="true">
          <span class="epg-ch" />
          <span class="epg-track">
            {Array.from({ length: 8 }, (_, i) => (
              <span key={i} class="epg-hour" style={{ left: `${(i * 100) / 8}%` }}>
                {String(i * 3).padStart(2, '0')}:00
              </span>
            ))}
          </span>
        </div>
        <ul class="epg-rows" aria-label={`Programmes of ${dateOf(day)} by channel`}>
          {(rows ?? []).map((r) => (
            <li class="epg-row" key={r.key} data-channel={r.name}>
              <span class="epg-ch">
                <a href={href('stream', r.key)}>{r.title || r.name}</a>
                <small class="muted"> {r.channel}</small>
              </span>
              <span class="epg-track">
                {nowPct !== null ? <span class="epg-now" style={{ left: `${nowPct}%` }} /> : null}
                {r.events === null ? <small class="muted">loading…</small> : null}
                {r.events?.length === 0 ? (
                  <small class="muted">{r.error ?? 'No programmes this day.'}</small>
                ) : null}
                {r.events?.map((e) => {
                  const from = Math.max(e.start, day);
                  const to = Math.min(e.end, day + DAY);
                  const on = picked?.ch === r.key && picked.ev.start === e.start;
                  return (
                    <button
                      type="button"
                      key={e.start}
                      class={`epg-ev${on ? ' on' : ''}${e.start <= now && now < e.end ? ' live' : ''}`}
                      data-testid="epg-event"
                      style={{
                        left: `${((from - day) / DAY) * 100}%`,
                        width: `${(Math.max(0, to - from) / DAY) * 100}%`,
                      }}
                      title={`${hm(e.start)}–${hm(e.end)} ${e.title}`}
                      aria-label={`${e.title}, ${hm(e.start)} to ${hm(e.end)}`}
                      aria-pressed={on}
                      onClick={() => setPicked(on ? null : { ch: r.key, ev: e })}
                    >
                      {e.title}
                    </button>
                  );
                })}
              </span>
            </li>
          ))}
        </ul>
      </div>
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
