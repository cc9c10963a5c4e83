// Writes a small XMLTV guide for the example stream: half-hour programmes from yesterday to
// three days ahead, so the example's EPG source always has a current schedule.
// Usage: tsx scripts/demo-guide.ts OUTPUT.xml [CHANNEL_ID]
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const SLOT_SEC = 1800;
const DAY_SEC = 86400;
const TITLES = [
  ['Morning News', 'Nachrichten am Morgen'],
  ['Test Card Classics', 'Testbild-Klassiker'],
  ['Weather', 'Wetter'],
  ['Documentary: Signal Paths', 'Doku: Signalwege'],
  ['Sports Roundup', 'Sport kompakt'],
  ['Late Movie', 'Spätfilm'],
] as const;

function xmltvTime(sec: number): string {
  return `${new Date(sec * 1000).toISOString().replace(/[-:T]/g, '').slice(0, 14)} +0000`;
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function demoGuide(channel: string, nowSec: number): string {
  const first = Math.floor(nowSec / DAY_SEC) * DAY_SEC - DAY_SEC;
  const last = first + 4 * DAY_SEC;
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<tv generator-info-name="sluice demo guide">',
    `  <channel id="${xmlEscape(channel)}"><display-name lang="en">Test pattern</display-name></channel>`,
  ];
  for (let t = first, i = 0; t < last; t += SLOT_SEC, i++) {
    const [en, de] = TITLES[i % TITLES.length]!;
    out.push(
      `  <programme start="${xmltvTime(t)}" stop="${xmltvTime(t + SLOT_SEC)}" channel="${xmlEscape(channel)}">`,
      `    <title lang="en">${xmlEscape(en)}</title>`,
      `    <title lang="de">${xmlEscape(de)}</title>`,
      `    <desc lang="en">Slot ${i % 48} of the demo schedule.</desc>`,
      '    <rating system="FSK"><value>6</value></rating>',
      '  </programme>',
    );
  }
  out.push('</tv>', '');
  return out.join('\n');
}

const [output, channel = 'test.sluice'] = process.argv.slice(2);
if (!output) {
  console.error('usage: tsx scripts/demo-guide.ts OUTPUT.xml [CHANNEL_ID]');
  process.exit(1);
}
mkdirSync(dirname(output), { recursive: true });
writeFileSync(output, demoGuide(channel, Math.floor(Date.now() / 1000)));
