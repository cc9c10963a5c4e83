// The round-trip time estimate of a ps1 receiver (docs/ps1.md "Receiver"): starts from the
// configured `ps1-client-rtt-ms`, then smoothed from echo samples as TCP does (RFC 6298).

/** Re-NACK interval floor: below this, timer granularity is all that would be measured. */
export const MIN_RTO_MS = 10;

export class RttEstimator {
  private srtt: number;
  private rttvar: number;
  samples = 0;

  constructor(initialMs: number) {
    this.srtt = initialMs;
    this.rttvar = initialMs / 2;
  }

  sample(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    if (this.samples === 0) {
      this.srtt = ms;
      this.rttvar = ms / 2;
    } else {
      this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - ms);
      this.srtt = 0.875 * this.srtt + 0.125 * ms;
    }
    this.samples++;
  }

  get rttMs(): number {
    return this.srtt;
  }

  get varMs(): number {
    return this.rttvar;
  }

  /** How long to wait for a retransmission before asking again. */
  get rtoMs(): number {
    return Math.max(MIN_RTO_MS, this.srtt + 4 * this.rttvar);
  }
}
