// The file text of a config document.
import { editJsonText } from './text-edit.ts';
import type { ConfigDocument } from './types.ts';

/** The file text of a document: 2-space JSON, member order kept, trailing newline. */
export function formatConfig(doc: ConfigDocument): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** The file text of `doc` written over `previous`: `previous` edited in place where it differs
 *  (its layout kept, so a one-member change is a one-line diff), or written afresh when it is
 *  empty or not JSON. */
export function formatConfigOver(previous: string, doc: ConfigDocument): string {
  if (previous.trim() === '') return formatConfig(doc);
  return editJsonText(previous, doc) ?? formatConfig(doc);
}
