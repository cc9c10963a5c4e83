// Reload a page's detail when its feed row changes, at most once per `everyMs`: a throttle, not
// a debounce (rows change every second, so a debounce would never fire). Used by the stream and
// adapter pages.
import { useEffect, useRef } from 'preact/hooks';

export function useThrottledReload(changed: unknown, load: () => unknown, everyMs: number): void {
  const last = useRef(0);
  const pending = useRef(0);
  useEffect(() => {
    if (pending.current) return;
    const wait = Math.max(0, last.current + everyMs - Date.now());
    pending.current = window.setTimeout(() => {
      pending.current = 0;
      last.current = Date.now();
      void load();
    }, wait);
  }, [changed]);
  useEffect(() => () => clearTimeout(pending.current), []);
}
