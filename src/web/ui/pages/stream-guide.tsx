// EPG now / next of one stream: its binding from /data/stream/{id}/guide, today's events from
// /data/epg/channel.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';

interface Ev {
  start: number;
  end: number;
  title: string;
  desc: string;
}

const hm = (sec: number) =>
  new Date(sec * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

export function Guide({ stream }: { stream: string }) {
  const [events, setEvents] = useState<Ev[] | null>(null);
  const [note, setNote] = useState('');
  useEffect(() => {
    void (async () => {
      try {
        const b = (
          await api<{ source: number; channel: string }>(
            `/data/stream/${encodeURIComponent(stream)}/guide`,
          )
        ).body;
        if (!b.channel) {
          setNote('Not bound to an EPG channel (epg-channel).');
          return;
        }
        const day = await api<{ event?: Ev[] }>(
          `/data/epg/channel?src=${b.source}&ch=${encodeURIComponent(b.channel)}`,
        );
        setEvents(day.body.event ?? []);
      } catch (e) {
        setNote((e as Error).message);
      }
    })();
  }, [stream]);
  if (note) return <p class="muted">{note}</p>;
  if (!events) return <p class="muted">Loading…</p>;
  const now = Date.now() / 1000;
  const i = events.findIndex((e) => e.start <= now && now < e.end);
  const shown = i < 0 ? events.filter((e) => e.start > now).slice(0, 1) : events.slice(i, i + 2);
  if (shown.length === 0) return <p class="muted">No programme today.</p>;
  return (
    <ul class="guide" data-testid="guide">
      {shown.map((e, n) => (
        <li key={e.start}>
          <strong>{i >= 0 && n === 0 ? 'Now' : 'Next'}</strong> {hm(e.start)}–{hm(e.end)} {e.title}
        </li>
      ))}
    </ul>
  );
}
