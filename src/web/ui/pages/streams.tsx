// The streams page: every stream as one row (state, active input, bit rate in/out with a
// sparkline, TR 101 290 counters, alerts, tags), with search and a tag filter, in a virtual list.
import { computed, signal } from '@preact/signals';
import { useEffect, useRef } from 'preact/hooks';
import { rate, STATE_CLASS } from '../format.ts';
import { alerts, history, loaded, rows, type StreamRow, streamAlerts, version } from '../live.ts';
import { href } from '../router.ts';
import { Sparkline } from '../sparkline.tsx';
import { VirtualList } from '../virtual-list.tsx';

const ROW_HEIGHT = 48;
const search = signal('');
const tag = signal('');

const allTags = computed(() => {
  void version.value;
  const set = new Set<string>();
  for (const r of rows.values()) for (const t of r.tags) set.add(t);
  return [...set].sort();
});

const shown = computed(() => {
  void version.value;
  const q = search.value.trim().toLowerCase();
  const t = tag.value;
  const out: StreamRow[] = [];
  for (const r of rows.values()) {
    if (t && !r.tags.includes(t)) continue;
    if (q && !`${r.name} ${r.title} ${r.id} ${r.state}`.toLowerCase().includes(q)) continue;
    out.push(r);
  }
  return out;
});

function Row({ r }: { r: StreamRow }) {
  const a = streamAlerts(r.name, alerts.value);
  const failover = r.active > 0;
  // Errors of the last minute: a total would stay red for good after one error.
  const p1 = r.p1m ?? r.p1;
  const p2 = r.p2m ?? r.p2;
  return (
    <a class="srow" href={href('stream', r.key)} data-stream={r.name} data-state={r.state}>
      <span class="c-name">
        <strong>{r.title || r.name}</strong>
        {r.title && r.title !== r.name ? <small> {r.name}</small> : null}
        {r.tags.map((t) => (
          <span class="tag" key={t}>
            {t}
          </span>
        ))}
      </span>
      <span class={`c-state badge ${STATE_CLASS[r.state] ?? 'muted'}`}>{r.state}</span>
      <span class={`c-input ${failover ? 'warn-text' : ''}`} title="active input / inputs">
        {r.inputs ? `${r.active >= 0 ? r.active + 1 : '–'}/${r.inputs}` : '—'}
        {failover ? ' backup' : ''}
      </span>
      <span class="c-rate">
        <Sparkline series={history.get(r.key)} />
        <small>
          {rate(r.in)} in · {rate(r.out)} out
        </small>
      </span>
      <span
        class="c-tr"
        data-testid="tr101290"
        title={`TR 101 290 errors in the last minute (totals since the input started: P1 ${r.p1}, P2 ${r.p2}, CC ${r.cc})`}
      >
        <span class={p1 ? 'bad-text' : ''}>P1 {p1}</span>{' '}
        <span class={p2 ? 'warn-text' : ''}>P2 {p2}</span> <span>CC {r.ccm ?? r.cc}</span>
      </span>
      <span class="c-alerts">
        {a.length ? (
          <span class="badge bad" title={a.map((x) => x.message).join('\n')}>
            {a.length} alert{a.length > 1 ? 's' : ''}
          </span>
        ) : null}
      </span>
    </a>
  );
}

export function StreamsPage() {
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    // `/` jumps to the search box, as in most consoles.
    const onKey = (e: KeyboardEvent) => {
      const tag = document.activeElement?.tagName;
      if (e.key === '/' && tag !== 'INPUT' && tag !== 'TEXTAREA') {
        e.preventDefault();
        // After this key's events are done, so its character never lands in the box.
        setTimeout(() => input.current?.focus(), 0);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  useEffect(() => {
    if (loaded.value && !performance.getEntriesByName('streams-ready').length) {
      performance.mark('streams-ready');
    }
  });
  const list = shown.value;
  return (
    <section class="page streams" aria-labelledby="streams-h">
      <div class="toolbar">
        <h1 id="streams-h">Streams</h1>
        <input
          ref={input}
          type="search"
          placeholder="Search (/)"
          aria-label="Search streams"
          value={search.value}
          onInput={(e) => {
            search.value = (e.currentTarget as HTMLInputElement).value;
          }}
        />
        <select
          aria-label="Tag filter"
          value={tag.value}
          onChange={(e) => {
            tag.value = (e.currentTarget as HTMLSelectElement).value;
          }}
        >
          <option value="">All tags</option>
          {allTags.value.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
        <span class="count" aria-live="polite" data-count={list.length}>
          {loaded.value ? `${list.length} of ${rows.size}` : 'loading…'}
        </span>
      </div>
      <div class="srow head" aria-hidden="true">
        <span class="c-name">Stream</span>
        <span class="c-state">State</span>
        <span class="c-input">Input</span>
        <span class="c-rate">Bit rate</span>
        <span class="c-tr">TR 101 290</span>
        <span class="c-alerts">Alerts</span>
      </div>
      <VirtualList
        items={list}
        rowHeight={ROW_HEIGHT}
        keyOf={(r) => r.key}
        label="Streams"
        render={(r) => <Row r={r} />}
      />
    </section>
  );
}
