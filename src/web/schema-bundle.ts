// The config schema as one self-contained document for the editor's completion: every schema
// file goes under `$defs/<file name>` and each `$ref` is rewritten to point inside.

type Node = Record<string, unknown>;

/** `files` by their `$id` (absolute URLs); `rootId` names the document's schema. */
export function bundleSchema(files: ReadonlyMap<string, Node>, rootId: string): Node {
  const nameOf = (id: string) => id.slice(id.lastIndexOf('/') + 1);
  const rewrite = (node: unknown, fileId: string): unknown => {
    if (Array.isArray(node)) return node.map((n) => rewrite(n, fileId));
    if (!node || typeof node !== 'object') return node;
    const out: Node = {};
    for (const [k, v] of Object.entries(node as Node)) {
      if (k === '$ref' && typeof v === 'string') {
        const url = new URL(v, fileId);
        const fragment = url.hash.slice(1);
        url.hash = '';
        out[k] = url.href === rootId ? `#${fragment}` : `#/$defs/${nameOf(url.href)}${fragment}`;
      } else if ((k === '$id' || k === '$schema') && fileId !== rootId) {
        // an embedded file is not a schema resource of its own
      } else {
        out[k] = rewrite(v, fileId);
      }
    }
    return out;
  };
  const root = rewrite(files.get(rootId) ?? {}, rootId) as Node;
  const defs: Node = { ...((root['$defs'] as Node | undefined) ?? {}) };
  for (const [id, file] of files) {
    if (id !== rootId) defs[nameOf(id)] = rewrite(file, id);
  }
  return { ...root, $defs: defs };
}
