// Character encoding of an XML document from its first bytes (XML 1.0 appendix F): a byte
// order mark, the UTF-16 pattern of `<?`, else the `encoding` of the XML declaration, else UTF-8.
// Real XMLTV guides come in ISO-8859-1, windows-1251, UTF-16…: decoding them as UTF-8 would
// silently turn every non-ASCII letter into U+FFFD.

/** Bytes looked at before the decoder is chosen (the XML declaration sits at the start). */
export const XML_SNIFF_BYTES = 512;

const DECLARED_ENCODING = /^<\?xml\s[^>]*?\bencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._:-]*)["']/;

/** The WHATWG encoding label to decode the document with; throws for an unsupported one. */
export function sniffXmlEncoding(head: Buffer): string {
  const [b0, b1, b2, b3] = head;
  if (b0 === 0xef && b1 === 0xbb && b2 === 0xbf) return 'utf-8';
  if (b0 === 0xff && b1 === 0xfe) return 'utf-16le';
  if (b0 === 0xfe && b1 === 0xff) return 'utf-16be';
  if (b0 === 0x3c && b1 === 0x00 && b2 === 0x3f && b3 === 0x00) return 'utf-16le';
  if (b0 === 0x00 && b1 === 0x3c && b2 === 0x00 && b3 === 0x3f) return 'utf-16be';
  const m = DECLARED_ENCODING.exec(head.toString('latin1'));
  if (!m) return 'utf-8';
  const label = m[1]!;
  let encoding: string;
  try {
    encoding = new TextDecoder(label).encoding;
  } catch {
    throw new Error(`XMLTV refused: the declared encoding "${label}" is not supported`);
  }
  // A declaration read as single bytes cannot truthfully say UTF-16 (there was no 16-bit
  // pattern above): the bytes are ASCII-compatible, so read them as UTF-8.
  return encoding.startsWith('utf-16') ? 'utf-8' : encoding;
}
