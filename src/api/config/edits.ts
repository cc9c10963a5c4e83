// The document edits behind each /config write, as pure functions from the current document
// to the next one. They run inside ConfigService.edit, one at a time, on the latest document,
// so concurrent edits of different resources compose instead of overwriting each other.
import type { ConfigDocument, SingletonKind } from '../../config/types.ts';
import { HttpError } from '../../errors.ts';
import {
  type CollectionKind,
  findRecord,
  isObject,
  listOf,
  recordId,
  requireRecord,
  setList,
} from './kinds.ts';

export type Mutation = (doc: ConfigDocument) => ConfigDocument;

/**
 * RFC 7396 merge of `patch` into a copy of `target`. Every member name is an ordinary member
 * (`constructor`, `prototype` included): whether the config allows it is the schema's call,
 * made when the result is validated. (The json-merge-patch package stopped at such a name and
 * silently dropped it and every member after it.) `__proto__` never gets this far: the body
 * parser refuses it.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  return mergeInto(structuredClone(target), structuredClone(patch));
}

/** Merge `patch` into `target` in place (both are this module's own copies). */
function mergeInto(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out = isObject(target) ? target : {};
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) {
      delete out[key];
      continue;
    }
    const merged = mergeInto(Object.hasOwn(out, key) ? out[key] : undefined, value);
    // A data member even for a name Object.prototype also has: never a prototype setter.
    Object.defineProperty(out, key, {
      value: merged,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return out;
}

function requireObject(v: unknown, what: string): Record<string, unknown> {
  if (!isObject(v)) throw new HttpError('BAD_REQUEST', `${what} must be a JSON object`);
  return v;
}

export function replaceDocument(body: unknown): Mutation {
  const next = requireObject(body, 'The config document');
  return () => structuredClone(next);
}

export function patchDocument(patch: unknown): Mutation {
  return (doc) => requireObject(mergePatch(doc, patch), 'The patched config document');
}

export function replaceSingleton(kind: SingletonKind, body: unknown): Mutation {
  const next = requireObject(body, kind);
  return (doc) => {
    if (Object.keys(next).length === 0) delete doc[kind];
    else doc[kind] = structuredClone(next);
    return doc;
  };
}

export function patchSingleton(kind: SingletonKind, patch: unknown): Mutation {
  requireObject(patch, `A patch of ${kind}`);
  return (doc) => {
    const next = requireObject(mergePatch(doc[kind] ?? {}, patch), kind);
    if (Object.keys(next).length === 0) delete doc[kind];
    else doc[kind] = next;
    return doc;
  };
}

/** Append a new record; 409 when its identity is taken, 400 when it has none. */
export function createRecord(def: CollectionKind, body: unknown): Mutation {
  const rec = requireObject(body, `A ${def.kind} record`);
  const id = recordId(def, rec);
  if (id === undefined) {
    const need = def.nameField ? `${def.idField} or ${def.nameField}` : def.idField;
    throw new HttpError('BAD_REQUEST', `A new ${def.kind} needs ${need}`);
  }
  return (doc) => {
    const list = listOf(doc, def);
    if (findRecord(def, list, id) >= 0) {
      throw new HttpError('CONFLICT', `${def.kind} ${id} already exists`);
    }
    setList(doc, def, [...list, structuredClone(rec)]);
    return doc;
  };
}

/** Replace record `id` by `body`; the identity defaults to the one in the URL. */
export function replaceRecord(def: CollectionKind, id: string, body: unknown): Mutation {
  const rec = requireObject(body, `A ${def.kind} record`);
  return (doc) => {
    const list = listOf(doc, def);
    const i = requireRecord(def, list, id);
    list[i] = keepIdentity(def, list[i]!, structuredClone(rec));
    setList(doc, def, list);
    return doc;
  };
}

/** Merge-patch record `id`; the result must still be an object. */
export function patchRecord(def: CollectionKind, id: string, patch: unknown): Mutation {
  requireObject(patch, `A patch of ${def.kind} ${id}`);
  return (doc) => {
    const list = listOf(doc, def);
    const i = requireRecord(def, list, id);
    list[i] = requireObject(mergePatch(list[i], patch), `${def.kind} ${id}`);
    setList(doc, def, list);
    return doc;
  };
}

export function deleteRecord(def: CollectionKind, id: string): Mutation {
  return (doc) => {
    const list = listOf(doc, def);
    const i = requireRecord(def, list, id);
    list.splice(i, 1);
    setList(doc, def, list);
    return doc;
  };
}

/** A PUT body that leaves out the identity keeps the record's (placed first, where it was);
 *  a different one renames the resource and is checked by validation like any change. */
function keepIdentity(
  def: CollectionKind,
  prev: Record<string, unknown>,
  next: Record<string, unknown>,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const field of [def.idField, def.nameField]) {
    if (field && next[field] === undefined && prev[field] !== undefined) kept[field] = prev[field];
  }
  return { ...kept, ...next };
}

/** Human label of an edit, used as the git commit message. */
export function editMessage(verb: string, what: string): string {
  return `api: ${verb} ${what}`;
}
