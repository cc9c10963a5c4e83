// Preloaded into a server child (NODE_OPTIONS --import, stallNodeOptions in test/helpers/
// stall.ts): SIGUSR2 holds the main thread's event loop busy for 300 ms, a real stall.
const STALL_MS = 300;

process.on('SIGUSR2', () => {
  const until = performance.now() + STALL_MS;
  while (performance.now() < until) {}
});
