// The SRT stream id of `srt` inputs and outputs (docs/transports.md, "Stream id"): what a caller
// sends for `srt-client-login` / `srt-client-password` or for peer-auth, in the SRT Access Control
// syntax.

/** The Access Control prefix: a stream id starting with it is a list of key=value pairs. */
export const ACCESS_CONTROL_PREFIX = '#!::';

/**
 * The stream id a caller sends: '' without a login; the login verbatim when it already is an
 * Access Control string (`#!::…`, the password is then not added); else `#!::u=LOGIN`, plus
 * `,s=PASSWORD` when a password is set (the key MediaMTX and others read a password from).
 * The stream id travels in the clear in the handshake: the passphrase is what keeps a link
 * private, not the password.
 */
export function callerStreamId(login: string, password: string): string {
  if (!login) return '';
  if (login.startsWith(ACCESS_CONTROL_PREFIX)) return login;
  return `${ACCESS_CONTROL_PREFIX}u=${login}${password ? `,s=${password}` : ''}`;
}

/** aes-type (0, 1, 2) → SRT key length in bytes (AES-128, -192, -256). */
export function keyLengthOf(aesType: number): 16 | 24 | 32 {
  return aesType === 2 ? 32 : aesType === 1 ? 24 : 16;
}

/** The stream id of a cluster peer (peer-auth): the node's name as the user, the domain's proof
 *  (src/engine/cluster.ts peerProof) as `s`: `#!::u=NODE,s=PROOF`. */
export function peerAuthStreamId(nodeName: string, proof: string): string {
  return `${ACCESS_CONTROL_PREFIX}u=${nodeName.replace(/[,=]/g, '_')},s=${proof}`;
}
