// The `x-url` annotation of schemas/: the URL schemes a string member takes (and whether a file
// path may stand instead), checked by the walker in validate.ts, so that an input or a webhook is
// never pointed at a scheme it should not open (`file:///etc/passwd` as a playlist).
import { maskCredentials } from '../util/credentials.ts';

/** `"x-url": { "schemes": ["http://", "https://"], "path": true }` — schemes as written in a
 *  URL, matched without regard to case; `path`: a value without a scheme is a file path. */
export interface UrlRule {
  schemes: string[];
  path?: boolean;
}

/** The scheme a value starts with (RFC 3986: a letter, then letters, digits, + - .). */
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

/** The rule of a schema node, if it has one. */
export function urlRuleOf(node: Record<string, unknown>): UrlRule | undefined {
  const r = node['x-url'] as UrlRule | undefined;
  return r && Array.isArray(r.schemes) ? r : undefined;
}

/** What a member with `rule` takes, in words: "a URL of scheme http:// or https://". */
export function urlRuleText(rule: UrlRule): string {
  const list = rule.schemes;
  const schemes =
    list.length === 1 ? list[0]! : `${list.slice(0, -1).join(', ')} or ${list[list.length - 1]}`;
  return `${rule.path ? 'a file path or ' : ''}a URL of scheme ${schemes}`;
}

/** A URL as shown in a message: its credentials masked as everywhere (src/util/credentials.ts). */
function shown(value: string): string {
  const s = JSON.stringify(maskCredentials(value));
  return s.length > 60 ? `${s.slice(0, 57)}..."` : s;
}

/** Why `value` of member `name` breaks `rule`, or undefined when it does not. An empty value is
 *  left to the member's other rules (minLength, or "empty = none"). */
export function urlProblem(name: string, value: string, rule: UrlRule): string | undefined {
  const v = value.trim();
  if (v === '') return undefined;
  const lower = v.toLowerCase();
  const prefix = rule.schemes.find((s) => lower.startsWith(s.toLowerCase()));
  if (prefix !== undefined && v.length > prefix.length) return undefined;
  if (prefix !== undefined)
    return `${name} must be ${urlRuleText(rule)}, got nothing after ${prefix}`;
  const scheme = SCHEME.exec(v)?.[1];
  if (scheme === undefined && rule.path) return undefined;
  const got = scheme === undefined ? 'no scheme' : `scheme ${scheme.toLowerCase()}:`;
  return `${name} must be ${urlRuleText(rule)}, got ${got} (${shown(v)})`;
}
