// Size caps of one XMLTV import (docs/epg.md, "Limits"). A guide breaking one is refused whole
// and the previous data stays: a 200 MB title, or a small gzip expanding to gigabytes, must not
// freeze the server or fill its memory and database. The parser's own buffers are checked after
// every write, so nothing grows much past a cap before the import stops.
import type { SaxesParser } from 'saxes';

export interface ImportLimits {
  /** Bytes of the document after gunzip (or of a plain download or file). */
  maxDocumentBytes: number;
  /** Characters of one text (title, desc, display-name, any element's text), attribute value,
   *  comment, CDATA section, processing instruction, DOCTYPE, name or entity reference. */
  maxTextChars: number;
  /** Attributes of one element. */
  maxAttributes: number;
  /** Depth of element nesting (XMLTV needs five at most: tv, programme, credits, actor, image). */
  maxDepth: number;
}

const MIB = 1024 * 1024;

export const IMPORT_LIMITS: Readonly<ImportLimits> = {
  // The largest guides in use (a country's every channel, two weeks) are a few hundred MB.
  maxDocumentBytes: 1024 * MIB,
  // A real description is a few hundred characters; 64 Ki is ten pages of text.
  maxTextChars: 64 * 1024,
  maxAttributes: 64,
  maxDepth: 32,
};

/** Write the decoded text to the parser in pieces of at most this many characters, so that a
 *  buffer is checked at most this far past its cap. */
export const WRITE_CHARS = 64 * 1024;

/** The buffers saxes (6.x) fills while it reads one token. They are not its public API: the
 *  constructor of LimitedParser refuses a saxes without them, and test/epg/xmltv-limits.test.ts
 *  checks each one, so an upgrade that renames them fails loudly instead of lifting the caps. */
interface SaxesBuffers {
  /** Text, attribute value, comment, CDATA, PI body or DOCTYPE being read. */
  text: string;
  /** Element or attribute name being read. */
  name: string;
  /** Name of an entity reference being read. */
  entity: string;
  piTarget: string;
  /** Attributes of the tag being opened. */
  attribList: unknown[];
}

/** "1024 MB" for whole mebibytes, else the bytes. */
export function sizeText(bytes: number): string {
  return bytes % MIB === 0 ? `${bytes / MIB} MB` : `${bytes} bytes`;
}

/** The cap checks around one saxes parser. */
export class LimitedParser {
  private buffers: SaxesBuffers;

  constructor(
    private parser: SaxesParser,
    private limits: ImportLimits,
  ) {
    const b = parser as unknown as Partial<SaxesBuffers>;
    if (
      typeof b.text !== 'string' ||
      typeof b.name !== 'string' ||
      typeof b.entity !== 'string' ||
      typeof b.piTarget !== 'string' ||
      !Array.isArray(b.attribList)
    ) {
      throw new Error(
        'XMLTV import unavailable: the saxes parser lacks the buffers its caps check',
      );
    }
    this.buffers = b as SaxesBuffers;
  }

  /** Throw when a buffer of the parser is over its cap. `where` names the element the parser
   *  is in, `openingTag` the tag whose attributes it is reading, if any (for the message). */
  check(where: string | undefined, openingTag: string | undefined): void {
    const b = this.buffers;
    const max = this.limits.maxTextChars;
    const at = `line ${this.parser.line}`;
    if (b.text.length > max) {
      const what = openingTag
        ? `an attribute value of <${openingTag}>`
        : where
          ? `the text of <${where}>`
          : 'markup outside <tv>';
      throw new Error(`XMLTV refused: ${what} is longer than ${max} characters (${at})`);
    }
    if (b.name.length > max || b.piTarget.length > max)
      throw new Error(`XMLTV refused: a name longer than ${max} characters (${at})`);
    if (b.entity.length > max)
      throw new Error(`XMLTV refused: an entity reference longer than ${max} characters (${at})`);
    if (b.attribList.length > this.limits.maxAttributes) {
      throw new Error(
        `XMLTV refused: <${openingTag ?? '?'}> has more than ${this.limits.maxAttributes} attributes (${at})`,
      );
    }
  }
}
