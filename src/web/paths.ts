// Where the dashboard answers: `web-server.ui-path` is mapped onto the fixed internal routes of
// the UI (src/api/routes/web.ts), so a changed ui-path needs no new routes.

/** The internal prefix the UI's routes are registered under. */
export const UI_ROUTE_PREFIX = '/_ui';
/** Folder of the built bundle below the UI path (`{ui-path}assets/app.js`). */
export const UI_ASSETS = 'assets/';

/**
 * The internal URL for `url` when it is one of the dashboard's own paths under `uiPath`:
 * `{ui-path}` and `{ui-path}index.html` (the page), `{ui-path}assets/…` (the bundle), and
 * `{ui-path}` without its last slash (a redirect). Anything else (a stream that happens to be
 * named like the UI path, the admin API) is left alone: undefined.
 */
export function uiRewrite(url: string, uiPath: string): string | undefined {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q);
  if (path === uiPath || path === `${uiPath}index.html`) return `${UI_ROUTE_PREFIX}/${query}`;
  if (uiPath.length > 1 && path === uiPath.slice(0, -1)) {
    return `${UI_ROUTE_PREFIX}/redirect${query}`;
  }
  if (path.startsWith(`${uiPath}${UI_ASSETS}`)) {
    return `${UI_ROUTE_PREFIX}/${UI_ASSETS}${path.slice(uiPath.length + UI_ASSETS.length)}`;
  }
  return undefined;
}

/** Content types of the files the bundle holds. */
export const ASSET_TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2',
};
