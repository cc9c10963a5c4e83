// Debian's Chromium for player tests (playwright-core), with the flags this closed network needs.
import { join } from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
];
/** The repository root (player page and player libraries are served from it). */
export const ROOT = join(import.meta.dirname, '..', '..');
