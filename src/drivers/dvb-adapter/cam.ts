// Cam: the CI slot of a tuner adapter in mode 0 with `cam-pnr` — opens the ca device, resets the
// slot, waits for the module, runs the EN 50221 host (src/dvb/en50221/host.ts) over it and hands
// it the live PMTs of the wanted programmes (read by the adapter, tables.ts). A module pulled
// out, reset or gone silent is initialised again after 1 s, 2 s, 4 s … up to 30 s.
import type { Logger } from 'pino';
import { CiHost, type CiHostStatus } from '../../dvb/en50221/host.ts';
import type { Pmt } from '../../mpegts/psi.ts';
import { CA_CI_LINK } from '../../native/dvb-ca.ts';
import type { Clock, Timer } from '../../util/clock.ts';
import type { Ca, DvbDevices } from './devices.ts';

/** Slot state is read and the host's link polled this often. */
export const CAM_TICK_MS = 50;
/** A module not ready this long after its reset is reset again. */
export const CAM_READY_TIMEOUT_MS = 20_000;
const REINIT_MIN_MS = 1000;
const REINIT_MAX_MS = 30_000;
/** The one slot of the ca device sluice drives. */
const SLOT = 0;

export type CamState = 'absent' | 'resetting' | 'initialising' | 'ready' | 'error';

export class Cam {
  private ca: Ca | null = null;
  private ci: CiHost | null = null;
  private tick: Timer | null = null;
  private retry: Timer | null = null;
  private retryMs = REINIT_MIN_MS;
  private state: CamState = 'resetting';
  private present = false;
  private moduleReady = false;
  private resetAt = 0;
  private resets = 0;
  private lastError = '';
  private last: CiHostStatus | null = null;
  /** The latest PMT of each wanted programme, for a host started later. */
  private readonly pmts = new Map<number, Pmt>();

  constructor(
    private readonly adapter: number,
    private readonly index: number,
    private readonly pnrs: number[],
    private readonly devices: DvbDevices,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.stop();
    try {
      this.ca = this.devices.ca(this.adapter, this.index, (t, err) => this.event(t, err));
      const caps = this.ca.caps();
      if (caps.slots < 1 || !(caps.slotType & CA_CI_LINK))
        throw new Error('the ca device has no CI slot with a link layer (CA_CI_LINK)');
    } catch (err) {
      this.ca?.close();
      this.ca = null;
      this.fault('error', (err as Error).message);
      return;
    }
    this.reset();
    this.tick = this.clock.setInterval(() => this.poll(), CAM_TICK_MS);
  }

  /** A new PMT version of a programme of the adapter's TS (the CAM gets the wanted ones). */
  setPmt(pmt: Pmt): void {
    if (!this.pnrs.includes(pmt.programNumber)) return;
    this.pmts.set(pmt.programNumber, pmt);
    this.ci?.setPmt(pmt);
  }

  stop(): void {
    this.tick?.cancel();
    this.tick = null;
    this.retry?.cancel();
    this.retry = null;
    this.ca?.close();
    this.ca = null;
    this.ci = null;
  }

  status(): Record<string, unknown> {
    const h = this.ci?.status() ?? this.last;
    return {
      state: this.state,
      present: this.present,
      ready: this.moduleReady,
      ...(h?.application ? { application: h.application } : {}),
      ...(h?.caSystemIds ? { caSystemIds: h.caSystemIds } : {}),
      programmes: h?.programmes ?? this.pnrs.map((pnr) => ({ pnr, state: 'waiting for CAM' })),
      caPmtsSent: h?.caPmtsSent ?? 0,
      resets: this.resets,
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.ca ? { device: this.ca.stats() } : {}),
    };
  }

  private reset(): void {
    this.ci = null;
    this.moduleReady = false;
    this.resets++;
    this.resetAt = this.clock.monotonic();
    this.state = 'resetting';
    try {
      this.ca?.reset(SLOT);
    } catch (err) {
      this.fault('error', (err as Error).message);
    }
  }

  private poll(): void {
    const ca = this.ca;
    if (!ca) return;
    const now = this.clock.monotonic();
    let slot: { present: boolean; ready: boolean };
    try {
      slot = ca.slotInfo(SLOT);
    } catch (err) {
      this.fault('error', (err as Error).message);
      return;
    }
    if (!slot.present) {
      if (this.present) this.log.warn('the CAM was pulled out');
      this.present = false;
      this.moduleReady = false;
      this.ci = null;
      this.state = 'absent';
      return;
    }
    if (!this.present && this.state === 'absent') {
      // A module put (back) in: reset it and start over.
      this.present = true;
      this.log.info('a CAM was inserted');
      this.reset();
      return;
    }
    this.present = true;
    if (!slot.ready) {
      if (this.ci) {
        // The module reset itself: initialise again.
        this.fault('resetting', 'the CAM reset itself');
        return;
      }
      this.moduleReady = false;
      if (now - this.resetAt >= CAM_READY_TIMEOUT_MS)
        this.fault('error', `the CAM was not ready ${CAM_READY_TIMEOUT_MS} ms after its reset`);
      return;
    }
    this.moduleReady = true;
    if (!this.ci) {
      this.ci = new CiHost(
        SLOT,
        this.pnrs,
        (b) => this.ca?.send(b),
        () => this.clock.now(),
      );
      for (const pmt of this.pmts.values()) this.ci.setPmt(pmt);
      this.state = 'initialising';
      this.ci.start(now);
      return;
    }
    this.ci.tick(now);
    this.after();
  }

  private slot(): { present: boolean; ready: boolean } | null {
    try {
      return this.ca?.slotInfo(SLOT) ?? null;
    } catch {
      return null;
    }
  }

  private event(tpdu: Buffer | null, error: string | null): void {
    if (!this.ci) return;
    if (error || !tpdu) {
      // A write refused because the module left or reset: the slot state says which.
      const slot = this.slot();
      if (slot && (!slot.present || !slot.ready)) this.poll();
      else this.fault('error', `ca device ${error ?? 'read nothing'}`);
      return;
    }
    this.ci.receive(tpdu, this.clock.monotonic());
    this.after();
  }

  /** Status after the host moved: ready once the CA support session has the CA system ids. */
  private after(): void {
    const ci = this.ci;
    if (!ci) return;
    if (ci.failed) {
      this.fault('error', ci.error);
      return;
    }
    this.last = ci.status();
    if (this.state !== 'ready' && this.last.caSystemIds) {
      this.state = 'ready';
      this.retryMs = REINIT_MIN_MS;
      this.log.info({ application: this.last.application }, 'the CAM is ready');
    }
  }

  /** A fault: keep the reason, drop the session stack, reset the module after the backoff. */
  private fault(state: CamState, message: string): void {
    this.log.warn({ message }, 'CAM fault');
    this.lastError = message;
    if (this.ci) this.last = this.ci.status();
    this.ci = null;
    this.state = state;
    this.retry?.cancel();
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, REINIT_MAX_MS);
    if (!this.ca) {
      // The device itself failed to open: open it again.
      this.retry = this.clock.setTimeout(() => this.start(), wait);
      return;
    }
    this.tick?.cancel();
    this.tick = null;
    this.retry = this.clock.setTimeout(() => {
      this.retry = null;
      this.reset();
      this.tick = this.clock.setInterval(() => this.poll(), CAM_TICK_MS);
    }, wait);
  }
}
