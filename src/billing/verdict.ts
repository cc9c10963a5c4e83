// Reading a billing server's reply (`response-format`, `-ok-path`, `-ok-value`,
// `-reason-path`): a verdict (allowed or not, with the server's reason), or "no verdict" when
// the reply cannot be judged (a server error, a body that does not parse). Spec 1 defaults:
// an empty ok-path looks at `allowed`, then `code`; an empty ok-value accepts `true` or `200`.
import { XMLParser } from 'fast-xml-parser';

export type ResponseFormat = 'status' | 'json' | 'xml';

export interface ReplyRules {
  format: ResponseFormat;
  okPath: string;
  okValue: string;
  reasonPath: string;
}

export type Judgement =
  | { verdict: true; allowed: boolean; reason?: string }
  | { verdict: false; why: string };

/** Paths an empty `response-ok-path` tries, in order. */
const DEFAULT_OK_PATHS = ['allowed', 'code'];
/** Values an empty `response-ok-value` accepts. */
const DEFAULT_OK_VALUES = new Set(['true', '200']);
const DEFAULT_REASON_PATH = 'reason';
/** A reason longer than this is cut (it goes into an HTTP answer and the log). */
const REASON_MAX = 200;

const xml = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  // Never expand entities (the project's rule): `&amp;` stays as written.
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
});

function shortReason(v: unknown): string | undefined {
  if (v === undefined || v === null || typeof v === 'object') return undefined;
  const s = String(v).replace(/\s+/g, ' ').trim();
  if (!s) return undefined;
  return s.length > REASON_MAX ? `${s.slice(0, REASON_MAX)}…` : s;
}

function isOk(value: unknown, okValue: string): boolean {
  if (value === undefined || value === null || typeof value === 'object') return false;
  const s = String(value);
  return okValue ? s === okValue : DEFAULT_OK_VALUES.has(s);
}

/** `a.b.0.c` in a parsed JSON document. */
export function atPath(doc: unknown, path: string): unknown {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function judgeFields(pick: (path: string) => unknown, rules: ReplyRules, what: string): Judgement {
  const paths = rules.okPath ? [rules.okPath] : DEFAULT_OK_PATHS;
  const path = paths.find((p) => pick(p) !== undefined);
  const reason = shortReason(pick(rules.reasonPath || DEFAULT_REASON_PATH));
  if (path === undefined)
    return {
      verdict: true,
      allowed: false,
      reason: reason ?? `reply has no ${paths.join(' or ')} ${what}`,
    };
  return { verdict: true, allowed: isOk(pick(path), rules.okValue), ...(reason ? { reason } : {}) };
}

/** The verdict in a reply of HTTP `status` with `body` (already cut to a bounded size). */
export function judgeReply(rules: ReplyRules, status: number, body: string): Judgement {
  // A server fault or an unresolved redirect is no verdict: the next server is asked.
  if (status >= 500 || (status >= 300 && status < 400))
    return { verdict: false, why: `HTTP ${status}` };
  if (rules.format === 'status') {
    const allowed = rules.okValue ? String(status) === rules.okValue : status === 200;
    const reason = allowed ? undefined : shortReason(body.split('\n', 1)[0]);
    return { verdict: true, allowed, ...(reason && !reason.startsWith('<') ? { reason } : {}) };
  }
  if (rules.format === 'json') {
    let doc: unknown;
    try {
      doc = JSON.parse(body);
    } catch {
      return { verdict: false, why: `HTTP ${status} reply is not JSON` };
    }
    return judgeFields((p) => atPath(doc, p), rules, 'field');
  }
  let doc: Record<string, unknown>;
  try {
    doc = xml.parse(body, true) as Record<string, unknown>;
  } catch (e) {
    return { verdict: false, why: `HTTP ${status} reply is not XML: ${(e as Error).message}` };
  }
  const rootName = Object.keys(doc).find((k) => !k.startsWith('?') && !k.startsWith('#'));
  const root = rootName === undefined ? undefined : doc[rootName];
  if (root === undefined || root === null || typeof root !== 'object')
    return { verdict: false, why: `HTTP ${status} reply has no XML root element with attributes` };
  const r = root as Record<string, unknown>;
  // A root attribute; for the reason a child element's text will do as well.
  const pick = (p: string) => r[`@${p}`] ?? (typeof r[p] === 'object' ? undefined : r[p]);
  return judgeFields(pick, rules, 'root attribute');
}
