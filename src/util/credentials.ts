// Credentials as anything an operator or a viewer reads shows them (session lists, logs, alert
// events, the dashboard): a token becomes a short fingerprint, the same one everywhere, that an
// operator can match against the billing system's logs; a password or other secret becomes ***.
import { createHash } from 'node:crypto';

export const MASK = '***';
/** Hex digits of SHA-256 a fingerprint keeps: 48 bits tell any two viewers apart. */
const FINGERPRINT_HEX = 12;

/** Query members whose values are tokens: shown as their fingerprint. */
const TOKEN_MEMBERS = new Set(['token', 'access_token']);
/** Query members that carry a credential: the viewer gate's `token` and `password`, the EPG
 *  server's `p`, and the names upstream servers commonly use. */
const CREDENTIAL_QUERY =
  /([?&;](token|access_token|password|passwd|pass|pwd|p|secret|passphrase)=)([^&#;\s"'<>]*)/gi;
const TRAILING_PUNCTUATION = /[).,\]]+$/;
const MASKED_TOKEN = new RegExp(`^sha256:[0-9a-f]{${FINGERPRINT_HEX}}$`);
/** The password of `scheme://user:password@host`. */
const USERINFO_PASSWORD = /(\/\/[^/\s:@]*:)[^/\s@]*@/g;

/** A token as it is shown: `sha256:` and the first 12 hex digits of its SHA-256 (of its UTF-8
 *  bytes, as the billing server receives it), e.g. `printf %s "$T" | sha256sum | cut -c1-12`. */
export function tokenFingerprint(token: string): string {
  const hash = createHash('sha256').update(token, 'utf8').digest('hex');
  return `sha256:${hash.slice(0, FINGERPRINT_HEX)}`;
}

/** `text` (a URL, a log message, an error) with every credential in a query or in the userinfo
 *  of a URL masked: tokens by their fingerprint, anything else by ***. */
export function maskCredentials(text: string): string {
  // Most messages have neither a query nor a userinfo: each scan only when it can match.
  const masked = text.includes('=') ? text.replace(CREDENTIAL_QUERY, maskMember) : text;
  return masked.includes('@') ? masked.replace(USERINFO_PASSWORD, `$1${MASK}@`) : masked;
}

function maskMember(_: string, head: string, name: string, written: string): string {
  // A URL in prose ends before the bracket or full stop that follows it.
  const value = written.replace(TRAILING_PUNCTUATION, '');
  // Nothing to hide, or masked already (a line is masked again when it is logged).
  if (value === '' || value === MASK || MASKED_TOKEN.test(value)) return head + written;
  const shown = TOKEN_MEMBERS.has(name.toLowerCase()) ? tokenFingerprint(decoded(value)) : MASK;
  return head + shown + written.slice(value.length);
}

/** A query value as the server reads it (`+` is a space), or as written when it is not valid
 *  percent-encoding. */
function decoded(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
}
