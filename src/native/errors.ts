// Errors raised by the native façade: argument checks (before crossing into C++) and faults
// reported by the addon, both as one class with a string `code`.

export type NativeErrorCode =
  | 'ERR_NATIVE_ARG' // an argument failed the façade's checks
  | 'ERR_NATIVE_LOAD' // build/Release/sluice_native.node missing or unloadable
  | 'ERR_NATIVE_CLOSED' // the object was used after close()
  | 'ERR_NATIVE_INTERNAL' // the addon threw without a code
  | (string & {}); // errno names from the addon (EADDRINUSE, EACCES, ENODEV, …)

export class NativeError extends Error {
  readonly code: NativeErrorCode;
  /** The system call that failed, when the addon reports one. */
  readonly syscall?: string;
  constructor(code: NativeErrorCode, message: string, syscall?: string) {
    super(message);
    this.name = 'NativeError';
    this.code = code;
    if (syscall !== undefined) this.syscall = syscall;
  }
}

/** Turn whatever the addon threw into a NativeError (keeps code and syscall when present). */
export function fromNative(err: unknown): NativeError {
  if (err instanceof NativeError) return err;
  if (err instanceof Error) {
    const e = err as Error & { code?: unknown; syscall?: unknown };
    const code = typeof e.code === 'string' ? e.code : 'ERR_NATIVE_INTERNAL';
    const syscall = typeof e.syscall === 'string' ? e.syscall : undefined;
    return new NativeError(code, e.message, syscall);
  }
  return new NativeError('ERR_NATIVE_INTERNAL', String(err));
}

export function argError(message: string): NativeError {
  return new NativeError('ERR_NATIVE_ARG', message);
}
