// A real stall of a server child's event loop on demand: NODE_OPTIONS for startServer's env that
// preload stall-preload.mjs, after which SIGUSR2 to the child holds its main thread for 300 ms.

/** How long one SIGUSR2 holds the loop (stall-preload.mjs). */
export const STALL_MS = 300;

export function stallNodeOptions(): string {
  const preload = new URL('./stall-preload.mjs', import.meta.url).href;
  return [process.env['NODE_OPTIONS'], `--import=${preload}`].filter(Boolean).join(' ');
}
