// Builds the dashboard bundle (src/web/ui/ → dist/ui/, git-ignored) with esbuild: app.js and
// app.css (no-cache), chunk-<hash>.js loaded on demand (the config editor, the player).
// scripts/setup runs it when a source is newer than the last build; `--force` always builds.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'dist/ui');
const TMP = `${OUT}.tmp-${process.pid}`;
/** Browsers of the last few years: ES2020 modules, dynamic import, CSS custom properties. */
const TARGET = ['chrome100', 'firefox100', 'safari15'];

await rm(TMP, { recursive: true, force: true });
await mkdir(TMP, { recursive: true });
const result = await build({
  entryPoints: { app: join(ROOT, 'src/web/ui/main.tsx') },
  bundle: true,
  splitting: true,
  format: 'esm',
  outdir: TMP,
  entryNames: '[name]',
  chunkNames: 'chunk-[hash]',
  assetNames: 'asset-[hash]',
  minify: true,
  target: TARGET,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  define: { 'process.env.NODE_ENV': '"production"' },
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
await writeFile(join(TMP, '.stamp'), `${new Date().toISOString()}\n`);
// Swap the whole folder so a running server never serves half a build.
await rm(OUT, { recursive: true, force: true });
await rename(TMP, OUT);
process.stdout.write(
  `build-web: ${Object.keys(result.metafile.outputs).length} files, ${(bytes / 1024).toFixed(0)} KiB in dist/ui\n`,
);
