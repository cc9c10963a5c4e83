// One registry of error codes for the API and the CLI: code, HTTP status, default message.

export const ERRORS = {
  BAD_REQUEST: { status: 400, message: 'Bad Request' },
  CONFIG_INVALID: { status: 400, message: 'The configuration is invalid' },
  UNAUTHORIZED: { status: 401, message: 'Unauthorized' },
  FORBIDDEN: { status: 403, message: 'Forbidden' },
  NOT_FOUND: { status: 404, message: 'Not Found' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method Not Allowed' },
  CONFLICT: { status: 409, message: 'Conflict' },
  PRECONDITION_FAILED: { status: 412, message: 'Precondition Failed' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Unsupported Media Type' },
  INTERNAL: { status: 500, message: 'Internal Server Error' },
  UNAVAILABLE: { status: 503, message: 'Service Unavailable' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

/** An error the API turns into `{status, message}` with its HTTP code. */
export class HttpError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details?: unknown,
  ) {
    super(message ?? ERRORS[code].message);
    this.name = 'HttpError';
    this.status = ERRORS[code].status;
  }
}
