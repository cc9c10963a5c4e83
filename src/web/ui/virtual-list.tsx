// A list that renders only the rows in view (plus a margin), so 1,000+ streams cost what 30 do.
// Rows have one fixed height; the arrow keys, Home and End move the focus through all rows.
import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

interface Props<T> {
  items: T[];
  rowHeight: number;
  keyOf: (item: T) => string;
  render: (item: T, index: number) => ComponentChildren;
  label: string;
  /** Told the rows drawn (first, end exclusive) whenever they change: what to load. */
  onRange?: (first: number, last: number) => void;
  /** A row to bring to the top when this value changes (-1: none), e.g. the one on air. */
  reveal?: number;
}

/** Rows drawn above and below the visible ones, so a fast scroll shows no gap. */
const OVERSCAN = 8;

export function VirtualList<T>({
  items,
  rowHeight,
  keyOf,
  render,
  label,
  onRange,
  reveal = -1,
}: Props<T>) {
  const box = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(600);
  const [, setTick] = useState(0);
  /** The row to focus once it is rendered (-1: none). Not a timer or an animation frame:
   *  those ran before the row existed, or not at all in a page that is not painted. */
  const focusNext = useRef(-1);

  useLayoutEffect(() => {
    const n = focusNext.current;
    const el = box.current;
    if (n < 0 || !el) return;
    const row = el.querySelector<HTMLElement>(`[data-index="${n}"]`);
    if (!row) return;
    focusNext.current = -1;
    (row.querySelector<HTMLElement>('a, button, [tabindex]') ?? row).focus();
  });

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const resize = new ResizeObserver(() => setHeight(el.clientHeight));
    resize.observe(el);
    setHeight(el.clientHeight);
    return () => resize.disconnect();
  }, []);

  const first = Math.max(0, Math.floor(top / rowHeight) - OVERSCAN);
  const last = Math.min(items.length, Math.ceil((top + height) / rowHeight) + OVERSCAN);
  useEffect(() => onRange?.(first, last), [first, last, items]);
  useEffect(() => {
    const el = box.current;
    if (reveal < 0 || !el) return;
    el.scrollTop = reveal * rowHeight;
    setTop(el.scrollTop);
  }, [reveal]);

  /** Focus row `i`, scrolling it into view first (it may not be rendered yet). */
  const focusRow = (i: number) => {
    const el = box.current;
    if (!el || items.length === 0) return;
    const n = Math.max(0, Math.min(items.length - 1, i));
    const y = n * rowHeight;
    if (y < el.scrollTop) el.scrollTop = y;
    else if (y + rowHeight > el.scrollTop + el.clientHeight) {
      el.scrollTop = y + rowHeight - el.clientHeight;
    }
    focusNext.current = n;
    // Row n may not be in the DOM yet: the layout effect above focuses it after the render that
    // setTop asks for (or at once, through the forced render, when the scroll did not move).
    setTop(el.scrollTop);
    setTick((x) => x + 1);
  };

  const onKey = (e: KeyboardEvent) => {
    const row = (e.target as HTMLElement).closest<HTMLElement>('[data-index]');
    const i = row ? Number(row.dataset['index']) : -1;
    const page = Math.max(1, Math.floor(height / rowHeight) - 1);
    const to: Record<string, number> = {
      ArrowDown: i + 1,
      ArrowUp: i - 1,
      PageDown: i + page,
      PageUp: i - page,
      Home: 0,
      End: items.length - 1,
    };
    if (to[e.key] === undefined) return;
    e.preventDefault();
    focusRow(to[e.key]!);
  };

  // The row links take the focus; the keys are read where they bubble to (the latest handler).
  const keys = useRef(onKey);
  keys.current = onKey;
  useEffect(() => {
    const el = box.current;
    const fn = (e: KeyboardEvent) => keys.current(e);
    el?.addEventListener('keydown', fn);
    return () => el?.removeEventListener('keydown', fn);
  }, []);

  return (
    <div
      class="vlist"
      ref={box}
      onScroll={(e) => setTop((e.currentTarget as HTMLDivElement).scrollTop)}
    >
      <ul aria-label={label} style={{ height: `${items.length * rowHeight}px` }}>
        {items.slice(first, last).map((item, j) => (
          <li
            key={keyOf(item)}
            class="vrow"
            data-index={first + j}
            style={{ top: `${(first + j) * rowHeight}px`, height: `${rowHeight}px` }}
          >
            {render(item, first + j)}
          </li>
        ))}
      </ul>
    </div>
  );
}
