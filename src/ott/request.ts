// The request and reply the OTT and archive handlers see: the few members they use, declared
// here so that ott/ and dvr/ know no HTTP framework. The admin API passes its own request and
// reply objects, which have these members (checked by the type system at the one call site).
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

export interface OttRequest {
  /** Only these reach a handler: src/ott/methods.ts judges the method before. */
  readonly method: 'GET' | 'HEAD';
  readonly url: string;
  /** Parsed query string (values are strings; repeated keys are the framework's business). */
  readonly query: unknown;
  readonly headers: IncomingHttpHeaders;
  /** The client's address (the socket peer). */
  readonly ip: string;
  readonly raw: IncomingMessage;
}

export interface OttReply {
  readonly raw: ServerResponse;
  code(status: number): OttReply;
  header(name: string, value: string | number): OttReply;
  type(contentType: string): OttReply;
  send(payload?: string | Buffer | object): OttReply;
  /** The handler writes on `raw` itself from here on. */
  hijack(): OttReply;
}

/** Handles one request under `/{name}/`; `rest` is the path after the name, e.g. `index.m3u8`. */
export type OttHandler = (req: OttRequest, reply: OttReply, rest: string) => unknown;
