// Request templates of a billing server (`request-query`, `request-body`, `request-header`):
// plain `{name}` placeholders filled with the request's values, each escaped for the place it
// stands in. Nothing else is interpreted: no expressions, no code (docs/billing.md).

/** Every placeholder a template may use, in the order of the built-in query. */
export const PLACEHOLDERS = [
  'event',
  'login',
  'password',
  'token',
  'ip',
  'stream',
  'session',
  'user_agent',
  'bytes',
  'duration',
  'secret',
] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];
export type TemplateValues = Partial<Record<Placeholder, string>>;

/** How a value is written where its placeholder stands. */
export type Escape = 'query' | 'json' | 'xml' | 'none';

const PLACEHOLDER = /\{([a-z_]+)\}/g;
const KNOWN = new Set<string>(PLACEHOLDERS);

function escapeValue(value: string, how: Escape): string {
  switch (how) {
    case 'query':
      return encodeURIComponent(value);
    case 'json':
      // The inside of a JSON string: the template supplies the quotes.
      return JSON.stringify(value).slice(1, -1);
    case 'xml':
      return value
        .replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&quot;')
        .replace(/'/g, '&apos;');
    case 'none':
      // Header values: no line breaks can end the header early.
      return value.replace(/[\r\n]/g, ' ');
  }
}

/** `template` with each known placeholder replaced; unknown `{…}` text is left as written. */
export function fillTemplate(template: string, values: TemplateValues, how: Escape): string {
  return template.replace(PLACEHOLDER, (whole, name: string) =>
    KNOWN.has(name) ? escapeValue(values[name as Placeholder] ?? '', how) : whole,
  );
}

/** Placeholders in `template` that are not ours (for a warning when the server is applied). */
export function unknownPlaceholders(template: string): string[] {
  const out: string[] = [];
  for (const m of template.matchAll(PLACEHOLDER)) if (!KNOWN.has(m[1]!)) out.push(m[0]);
  return out;
}

/** The query of a server whose `request-query` is empty: every value, by its own name. */
export function builtinQuery(values: TemplateValues): string {
  const q = new URLSearchParams();
  for (const name of PLACEHOLDERS) q.set(name, values[name] ?? '');
  return q.toString();
}

export type BodyKind = 'json' | 'xml' | 'form';

/** What a body template is, from its first character: `{`/`[` JSON, `<` XML, else a form. */
export function bodyKind(template: string): BodyKind {
  const c = template.trimStart()[0];
  if (c === '{' || c === '[') return 'json';
  if (c === '<') return 'xml';
  return 'form';
}

const CONTENT_TYPES: Record<BodyKind, string> = {
  json: 'application/json',
  xml: 'application/xml',
  form: 'application/x-www-form-urlencoded',
};

/** The body's bytes and its Content-Type (`request-content-type` wins when set). */
export function fillBody(
  template: string,
  values: TemplateValues,
  contentType: string,
): { body: string; contentType: string } {
  const kind = bodyKind(template);
  const how: Escape = kind === 'form' ? 'query' : kind;
  return {
    body: fillTemplate(template, values, how),
    contentType: contentType || CONTENT_TYPES[kind],
  };
}

/** `request-header`: one `Name: value` per line; blank lines skipped, others reported. */
export function parseHeaderLines(text: string): { headers: [string, string][]; bad: string[] } {
  const headers: [string, string][] = [];
  const bad: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line) continue;
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      bad.push(line);
      continue;
    }
    headers.push([name, line.slice(colon + 1).trim()]);
  }
  return { headers, bad };
}
