// What a scan learns on one transponder, from its sections (PAT, PMTs, SDT actual, NIT actual):
// the services (programme number, name, provider, type, scrambled, PIDs) and the other
// transponders the network announces. Pure: the scanner feeds it the sections it reads. Names
// stay bytes (DVB text; the caller decodes them).
import { parseNit } from '../mpegts/nit.ts';
import {
  NIT_ACTUAL_TABLE_ID,
  PAT_TABLE_ID,
  PMT_TABLE_ID,
  parseDescriptors,
  parsePat,
  parsePmt,
  SDT_ACTUAL_TABLE_ID,
} from '../mpegts/psi.ts';
import { parseSdt, parseServiceDescriptor } from '../mpegts/sdt.ts';
import { type TransponderTuning, transponderOf } from './delivery.ts';

const DESCRIPTOR_CA = 0x09;
const DESCRIPTOR_SERVICE = 0x48;
const DESCRIPTOR_NETWORK_NAME = 0x40;
const NIT_PID = 0x10;
const SDT_PID = 0x11;

export interface ScannedService {
  pnr: number;
  name: Buffer;
  provider: Buffer;
  /** service_type of the SDT (0 when the SDT does not list the service). */
  type: number;
  /** free_CA_mode in the SDT, or a CA descriptor in the PMT. */
  scrambled: boolean;
  pmtPid: number;
  pids: number[];
}

export interface TransponderResult {
  transportStreamId: number | null;
  originalNetworkId: number | null;
  networkName: Buffer | null;
  services: ScannedService[];
  /** Transponders the NIT actual announces (this one included), as tuning members. */
  network: TransponderTuning[];
}

export class TransponderScan {
  private pat: ReturnType<typeof parsePat> | null = null;
  private readonly pmts = new Map<number, ReturnType<typeof parsePmt>>();
  private sdt: ReturnType<typeof parseSdt> | null = null;
  private nit: ReturnType<typeof parseNit> | null = null;

  /** @param system the adapter's delivery system (which delivery descriptors to follow). */
  constructor(private readonly system: number) {}

  /** One complete section (CRC checked) read from the transponder. */
  section(pid: number, tableId: number, data: Buffer): void {
    if (pid === 0 && tableId === PAT_TABLE_ID) this.pat ??= parsePat(data);
    else if (tableId === PMT_TABLE_ID) {
      const pmt = parsePmt(data);
      const pmtPid = this.pat?.programs.find((p) => p.programNumber === pmt.programNumber)?.pid;
      if (pmtPid === pid && !this.pmts.has(pmt.programNumber))
        this.pmts.set(pmt.programNumber, pmt);
    } else if (pid === SDT_PID && tableId === SDT_ACTUAL_TABLE_ID) this.sdt ??= parseSdt(data);
    else if (pid === NIT_PID && tableId === NIT_ACTUAL_TABLE_ID) this.nit ??= parseNit(data);
  }

  /** Every table a scan waits for has been seen (a multiplex without an SDT or NIT is finished
   *  by the scanner's timeout instead). */
  get complete(): boolean {
    return (
      this.pat?.programs.every((p) => this.pmts.has(p.programNumber)) === true &&
      this.sdt !== null &&
      this.nit !== null
    );
  }

  result(): TransponderResult {
    const services: ScannedService[] = (this.pat?.programs ?? []).map((p) => {
      const pmt = this.pmts.get(p.programNumber);
      const entry = this.sdt?.services.find((s) => s.serviceId === p.programNumber);
      const sd = entry
        ? parseDescriptors(entry.descriptors).find((d) => d.tag === DESCRIPTOR_SERVICE)
        : undefined;
      const desc = sd ? parseServiceDescriptor(sd.data) : undefined;
      const ca = (loop: Buffer) => parseDescriptors(loop).some((d) => d.tag === DESCRIPTOR_CA);
      return {
        pnr: p.programNumber,
        name: desc?.name ?? Buffer.alloc(0),
        provider: desc?.provider ?? Buffer.alloc(0),
        type: desc?.serviceType ?? 0,
        scrambled:
          entry?.freeCaMode === true ||
          (pmt !== undefined &&
            (ca(pmt.programInfo) || pmt.streams.some((s) => ca(s.descriptors)))),
        pmtPid: p.pid,
        pids: pmt ? pmt.streams.map((s) => s.pid) : [],
      };
    });
    const name = this.nit
      ? parseDescriptors(this.nit.descriptors).find((d) => d.tag === DESCRIPTOR_NETWORK_NAME)
      : undefined;
    return {
      transportStreamId: this.pat?.transportStreamId ?? null,
      originalNetworkId: this.sdt?.originalNetworkId ?? null,
      networkName: name?.data ?? null,
      services,
      network: (this.nit?.transportStreams ?? []).flatMap(
        (ts) => transponderOf(ts.descriptors, this.system) ?? [],
      ),
    };
  }
}
