// Moving a listening socket (the admin or EPG server) to new settings: the new one is bound
// before the serving one closes, so a port another program holds leaves the old one serving.

/** One move, in the caller's terms: `L` is the caller's listener. */
export interface ListenerMove<L> {
  /** The listener serving now, if any. */
  old: L | undefined;
  /** Both want the same port: the new one cannot bind beside the old. */
  samePort: boolean;
  /** Bind the new listener (undefined: none is wanted). */
  open(): Promise<L | undefined>;
  /** Bind the old settings again, after a same-port move failed. */
  reopen(): Promise<L | undefined>;
  shut(l: L): Promise<void>;
  /** Keep `l` as the listener that serves now. */
  hold(l: L | undefined): void;
}

/**
 * Bind the new listener, then close the old. When both want the same port the old closes
 * first and is bound again if the new one fails. Throws the new listener's error; by then
 * the listener held is the one that still serves.
 */
export async function moveListener<L>(m: ListenerMove<L>): Promise<void> {
  const old = m.old;
  if (!old || !m.samePort) {
    const fresh = await m.open(); // throws with the old one untouched
    m.hold(fresh);
    if (old) await m.shut(old);
    return;
  }
  m.hold(undefined);
  await m.shut(old);
  try {
    m.hold(await m.open());
  } catch (err) {
    m.hold(await m.reopen().catch(() => undefined));
    throw err;
  }
}
