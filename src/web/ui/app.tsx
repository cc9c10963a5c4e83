// The dashboard's frame: navigation, connection state, theme switch, and the page of the route.
import { signal } from '@preact/signals';
import { adapters, alerts, connected, me } from './live.ts';
import { AdapterPage } from './pages/adapter.tsx';
import { AdaptersPage, needsAttention } from './pages/adapters.tsx';
import { AlertsPage } from './pages/alerts.tsx';
import { ConfigPage } from './pages/config.tsx';
import { EpgPage } from './pages/epg.tsx';
import { EpgChannelPage } from './pages/epg-channel.tsx';
import { MosaicPage } from './pages/mosaic.tsx';
import { StoragesPage } from './pages/storages.tsx';
import { StreamPage } from './pages/stream.tsx';
import { StreamsPage } from './pages/streams.tsx';
import { href, route } from './router.ts';

type Theme = 'light' | 'dark';
const THEME_KEY = 'sluice-theme';

function initialTheme(): Theme {
  const saved = localStorage.getItem(THEME_KEY);
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}
export const theme = signal<Theme>(initialTheme());
document.documentElement.dataset['theme'] = theme.value;

function toggleTheme(): void {
  theme.value = theme.value === 'dark' ? 'light' : 'dark';
  document.documentElement.dataset['theme'] = theme.value;
  localStorage.setItem(THEME_KEY, theme.value);
}

const PAGES: { page: string; label: string; admin?: boolean }[] = [
  { page: 'streams', label: 'Streams' },
  { page: 'alerts', label: 'Alerts' },
  { page: 'adapters', label: 'Adapters' },
  { page: 'storages', label: 'Storages' },
  { page: 'epg', label: 'EPG' },
  { page: 'mosaic', label: 'Mosaic' },
  { page: 'config', label: 'Config', admin: true },
];

/** Pages under another's navigation entry. */
const PARENT: Readonly<Record<string, string>> = { stream: 'streams', adapter: 'adapters' };

function Page() {
  const r = route.value;
  switch (r.page) {
    case 'stream':
      return <StreamPage id={r.arg} key={r.arg} />;
    case 'alerts':
      return <AlertsPage />;
    case 'adapters':
      return <AdaptersPage />;
    case 'adapter':
      return <AdapterPage id={r.arg} key={r.arg} />;
    case 'storages':
      return <StoragesPage />;
    case 'epg':
      return r.arg ? <EpgChannelPage id={r.arg} key={r.arg} /> : <EpgPage />;
    case 'mosaic':
      return <MosaicPage />;
    case 'config':
      return <ConfigPage />;
    default:
      return <StreamsPage />;
  }
}

export function App() {
  const m = me.value;
  const admin = m?.role === 'admin';
  const current = PARENT[route.value.page] ?? route.value.page;
  const faulty = [...adapters.value.values()].filter(needsAttention).length;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">sluice</span>
        <nav aria-label="Pages">
          {PAGES.filter((p) => !p.admin || admin).map((p) => (
            <a
              key={p.page}
              href={href(p.page)}
              aria-current={current === p.page ? 'page' : undefined}
            >
              {p.label}
              {p.page === 'alerts' && alerts.value.length ? (
                <span class="badge bad">{alerts.value.length}</span>
              ) : null}
              {p.page === 'adapters' && faulty ? (
                <span class="badge bad" title="adapters without lock or failed">
                  {faulty}
                </span>
              ) : null}
            </a>
          ))}
        </nav>
        <span class={`conn ${connected.value}`} role="status" data-testid="conn">
          {connected.value}
        </span>
        <span class="who" data-testid="who">
          {m ? `${m.login ?? 'local'} (${m.role})` : ''}
        </span>
        <button type="button" onClick={toggleTheme} aria-label="Switch theme">
          {theme.value === 'dark' ? 'Light' : 'Dark'}
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page />
      </main>
    </>
  );
}
