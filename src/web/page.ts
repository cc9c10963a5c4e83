// The dashboard's one HTML page and where its bundle lives. The bundle is built at set-up
// (scripts/build-web.ts → dist/ui/, git-ignored); the page names it relative to `<base>`.
import { fileURLToPath } from 'node:url';

/** The built bundle (app.js, app.css, chunk-*.js). */
export const UI_BUNDLE_DIR = fileURLToPath(new URL('../../dist/ui/', import.meta.url));

/** Nothing but the server itself: no CDN, no inline script. hls.js plays from blob: URLs and
 *  runs its transmuxer in a blob: worker; CodeMirror and uPlot set inline styles. */
export const UI_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

const escapeAttr = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** The page for a UI mounted at `uiPath` (a path that starts and ends with `/`). */
export function uiPage(uiPath: string): string {
  const base = escapeAttr(uiPath);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<base href="${base}">
<title>sluice</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="assets/app.css">
<script type="module" src="assets/app.js"></script>
</head>
<body>
<div id="app"><p class="boot">Loading the dashboard…</p></div>
</body>
</html>
`;
}
