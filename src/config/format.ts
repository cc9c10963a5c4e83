// The file text of a config document.
import type { ConfigDocument } from './types.ts';

/** The file text of a document: 2-space JSON, member order kept, trailing newline. */
export function formatConfig(doc: ConfigDocument): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
