// Teletext page → WebVTT cue: boxed text of subtitle pages, colours as the WebVTT colour
// classes (`<c.yellow>`), the top row as a `line:` percentage; double-height rows take
// two rows. A CueTrack turns the stream of page updates into timed cues.
import { g0Char, g2Char, withDiacritic } from './charset.ts';
import type { TeletextPage } from './teletext.ts';

const ROW_COLUMNS = 40;
const FIRST_ROW = 1;
const LAST_ROW = 23;
/** Teletext has 25 rows (0..24); `line:` is the top of the cue in percent of the height. */
const SCREEN_ROWS = 25;
/** WebVTT's default colour classes for teletext colours 0..7. */
const COLOUR_CLASSES = ['black', 'red', 'lime', 'yellow', 'blue', 'magenta', 'cyan', 'white'];
const WHITE = 7;
const ATTR_ALPHA_MAX = 0x07;
const ATTR_END_BOX = 0x0a;
const ATTR_START_BOX = 0x0b;
const ATTR_DOUBLE_HEIGHT = 0x0d;
const ATTR_DOUBLE_SIZE = 0x0f;
const ATTR_MOSAIC_MIN = 0x10;
const ATTR_MOSAIC_MAX = 0x17;

export interface CueContent {
  /** WebVTT cue payload (markup, one line per non-empty row). */
  text: string;
  /** The same without markup: for comparisons and logs. */
  plain: string;
  /** Cue settings, e.g. `line:80% align:center`. */
  settings: string;
}

interface Run {
  colour: number;
  text: string;
}

export function escapeVtt(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function anyBox(page: TeletextPage): boolean {
  for (const cells of page.rows.values()) if (cells.includes(ATTR_START_BOX)) return true;
  return false;
}

/** The visible runs of one row: boxed text only on subtitle pages that use boxes. */
function rowRuns(page: TeletextPage, row: number, cells: Int16Array, boxedOnly: boolean) {
  const runs: Run[] = [];
  let colour = WHITE;
  let box = false;
  let mosaic = false;
  let doubleHeight = false;
  const put = (ch: string, c: number) => {
    const last = runs[runs.length - 1];
    if (last && last.colour === c) last.text += ch;
    else runs.push({ colour: c, text: ch });
  };
  for (let col = 0; col < ROW_COLUMNS; col++) {
    const code = cells[col]!;
    const visible = box || !boxedOnly;
    if (code >= 0 && code < 0x20) {
      // Spacing attributes show as a space and take effect on the next cell (set-after).
      if (visible) put(' ', colour);
      if (code <= ATTR_ALPHA_MAX) {
        colour = code;
        mosaic = false;
      } else if (code === ATTR_START_BOX) box = true;
      else if (code === ATTR_END_BOX) box = false;
      else if (code === ATTR_DOUBLE_HEIGHT || code === ATTR_DOUBLE_SIZE) doubleHeight = true;
      else if (code >= ATTR_MOSAIC_MIN && code <= ATTR_MOSAIC_MAX) mosaic = true;
      continue;
    }
    if (!visible) continue;
    const enh = page.enhancements.get(row * ROW_COLUMNS + col);
    let ch: string;
    if (enh) ch = enh.kind === 'g2' ? g2Char(enh.code) : withDiacritic(enh.code, enh.mark);
    else if (code < 0 || mosaic) ch = ' ';
    else ch = g0Char(code, page.national);
    put(ch, colour);
  }
  // Trim the row's outer spaces (teletext centres subtitles with them; WebVTT centres itself).
  while (runs.length && runs[0]!.text.trimStart() === '') runs.shift();
  while (runs.length && runs[runs.length - 1]!.text.trimEnd() === '') runs.pop();
  if (runs.length) {
    runs[0]!.text = runs[0]!.text.trimStart();
    runs[runs.length - 1]!.text = runs[runs.length - 1]!.text.trimEnd();
  }
  return { runs, doubleHeight };
}

/** Render a page as cue content; undefined when nothing is visible (the screen clears). */
export function pageToCue(page: TeletextPage): CueContent | undefined {
  const boxedOnly = page.subtitle && anyBox(page);
  const lines: string[] = [];
  const plain: string[] = [];
  let top = -1;
  for (let row = FIRST_ROW; row <= LAST_ROW; row++) {
    const cells = page.rows.get(row);
    if (!cells) continue;
    const { runs, doubleHeight } = rowRuns(page, row, cells, boxedOnly);
    if (runs.length > 0) {
      if (top < 0) top = row;
      lines.push(
        runs
          .map((r) =>
            r.colour === WHITE
              ? escapeVtt(r.text)
              : `<c.${COLOUR_CLASSES[r.colour]}>${escapeVtt(r.text)}</c>`,
          )
          .join(''),
      );
      plain.push(runs.map((r) => r.text).join(''));
    }
    if (doubleHeight) row++; // the row below is covered by the double-height one
  }
  if (lines.length === 0) return undefined;
  const line = Math.round((top * 100) / SCREEN_ROWS);
  return {
    text: lines.join('\n'),
    plain: plain.join('\n'),
    settings: `line:${line}% align:center`,
  };
}

export interface Cue {
  /** Unwrapped 90 kHz PTS. */
  start: number;
  /** Undefined while the cue is still on screen. */
  end?: number;
  content: CueContent;
}

/** The cues of one subtitle page over time: each update replaces what is on screen. */
export class CueTrack {
  cues: Cue[] = [];
  private last?: Cue;

  update(pts: number, content: CueContent | undefined): void {
    const cur = this.last?.end === undefined ? this.last : undefined;
    if (cur && cur.start === pts) {
      // More rows of the same transmission arrived in a later PES.
      if (content) cur.content = content;
      else {
        this.cues.pop();
        this.last = this.cues[this.cues.length - 1];
      }
      return;
    }
    if (
      cur &&
      content &&
      cur.content.text === content.text &&
      cur.content.settings === content.settings
    )
      return; // a repeat of what is shown
    if (cur) cur.end = Math.max(cur.start, pts);
    if (!content) return;
    this.last = { start: pts, content };
    this.cues.push(this.last);
  }

  /** Close what is on screen (a splice: the timeline ends here). */
  close(pts: number): void {
    if (this.last && this.last.end === undefined) this.last.end = Math.max(this.last.start, pts);
  }

  /** Cues overlapping [from, to), an open cue counting as running to `to`. */
  between(from: number, to: number): Cue[] {
    return this.cues.filter((c) => c.start < to && (c.end === undefined || c.end > from));
  }

  /** Forget cues that ended before `pts`. */
  prune(pts: number): void {
    this.cues = this.cues.filter((c) => c.end === undefined || c.end > pts);
  }
}
