// Pages live in the URL's hash (`#/streams`, `#/stream/12`, `#/config`), so the server serves
// one page whatever the UI path is, and the back button works.
import { signal } from '@preact/signals';

export interface Route {
  page: string;
  arg: string;
}

function parse(hash: string): Route {
  const [page = '', ...rest] = hash.replace(/^#\/?/, '').split('/');
  return { page: page || 'streams', arg: decodeURIComponent(rest.join('/')) };
}

export const route = signal<Route>(parse(location.hash));

window.addEventListener('hashchange', () => {
  route.value = parse(location.hash);
});

export function href(page: string, arg?: string): string {
  return `#/${page}${arg !== undefined ? `/${encodeURIComponent(arg)}` : ''}`;
}
