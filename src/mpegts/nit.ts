// DVB Network Information Table (EN 300 468 5.2.1) parse and build, with the descriptors a
// multiplex signals about itself: network_name (6.2.27), service_list (6.2.35) and
// country_availability (6.2.10, in the SDT's service loop). Text fields stay bytes.
import {
  buildDescriptors,
  buildSection,
  CRC_SIZE,
  LONG_HEADER_SIZE,
  NIT_ACTUAL_TABLE_ID,
  NIT_OTHER_TABLE_ID,
  parseSectionHeader,
  SECTION_PREFIX_SIZE,
  SI_SECTION_FLAGS,
  sectionLength,
} from './psi.ts';

export const DESCRIPTOR_NETWORK_NAME = 0x40;
export const DESCRIPTOR_SERVICE_LIST = 0x41;
export const DESCRIPTOR_COUNTRY_AVAILABILITY = 0x49;
/** 4 reserved bits in front of a 12-bit loop length. */
const RESERVED_LENGTH = 0xf0;
const TS_ENTRY_HEADER_SIZE = 6;
const SERVICE_LIST_ENTRY_SIZE = 3;

export interface NitTransportStream {
  transportStreamId: number;
  originalNetworkId: number;
  /** The transport_descriptors loop. */
  descriptors: Buffer;
}

export interface Nit {
  /** table 0x40 (this network) rather than 0x41 (another one). */
  actual: boolean;
  networkId: number;
  version: number;
  currentNext: boolean;
  /** The network_descriptors loop. */
  descriptors: Buffer;
  transportStreams: NitTransportStream[];
}

function lengthField(n: number): Buffer {
  return Buffer.from([RESERVED_LENGTH | (n >> 8), n & 0xff]);
}

function read12(s: Uint8Array, o: number): number {
  return ((s[o]! & 0x0f) << 8) | s[o + 1]!;
}

export function buildNit(nit: Nit): Buffer {
  const entries: Buffer[] = [];
  for (const ts of nit.transportStreams) {
    const head = Buffer.alloc(4);
    head.writeUInt16BE(ts.transportStreamId, 0);
    head.writeUInt16BE(ts.originalNetworkId, 2);
    entries.push(head, lengthField(ts.descriptors.length), ts.descriptors);
  }
  const loop = Buffer.concat(entries);
  return buildSection(
    {
      tableId: nit.actual ? NIT_ACTUAL_TABLE_ID : NIT_OTHER_TABLE_ID,
      tableIdExtension: nit.networkId,
      version: nit.version,
      currentNext: nit.currentNext,
      flags: SI_SECTION_FLAGS,
    },
    Buffer.concat([
      lengthField(nit.descriptors.length),
      nit.descriptors,
      lengthField(loop.length),
      loop,
    ]),
  );
}

export function parseNit(section: Buffer): Nit {
  const h = parseSectionHeader(section);
  const end = Math.min(section.length, SECTION_PREFIX_SIZE + sectionLength(section) - CRC_SIZE);
  const netLen = read12(section, LONG_HEADER_SIZE);
  const netAt = LONG_HEADER_SIZE + 2;
  const nit: Nit = {
    actual: h.tableId === NIT_ACTUAL_TABLE_ID,
    networkId: h.tableIdExtension,
    version: h.version,
    currentNext: h.currentNext,
    descriptors: section.subarray(netAt, Math.min(end, netAt + netLen)),
    transportStreams: [],
  };
  const loopAt = netAt + netLen + 2;
  const loopEnd = Math.min(end, loopAt + read12(section, netAt + netLen));
  for (let o = loopAt; o + TS_ENTRY_HEADER_SIZE <= loopEnd; ) {
    const len = read12(section, o + 4);
    const d = o + TS_ENTRY_HEADER_SIZE;
    nit.transportStreams.push({
      transportStreamId: section.readUInt16BE(o),
      originalNetworkId: section.readUInt16BE(o + 2),
      descriptors: section.subarray(d, Math.min(loopEnd, d + len)),
    });
    o = d + len;
  }
  return nit;
}

/** A whole network_name_descriptor. */
export function networkNameDescriptor(name: Buffer): Buffer {
  return buildDescriptors([{ tag: DESCRIPTOR_NETWORK_NAME, data: name.subarray(0, 255) }]);
}

export interface ServiceListEntry {
  serviceId: number;
  serviceType: number;
}

/** A whole service_list_descriptor (at most 85 services fit one descriptor; more are cut). */
export function serviceListDescriptor(services: readonly ServiceListEntry[]): Buffer {
  const list = services.slice(0, Math.floor(255 / SERVICE_LIST_ENTRY_SIZE));
  const data = Buffer.alloc(list.length * SERVICE_LIST_ENTRY_SIZE);
  list.forEach((s, i) => {
    data.writeUInt16BE(s.serviceId, i * SERVICE_LIST_ENTRY_SIZE);
    data[i * SERVICE_LIST_ENTRY_SIZE + 2] = s.serviceType;
  });
  return buildDescriptors([{ tag: DESCRIPTOR_SERVICE_LIST, data }]);
}

export function parseServiceList(data: Buffer): ServiceListEntry[] {
  const out: ServiceListEntry[] = [];
  for (let o = 0; o + SERVICE_LIST_ENTRY_SIZE <= data.length; o += SERVICE_LIST_ENTRY_SIZE) {
    out.push({ serviceId: data.readUInt16BE(o), serviceType: data[o + 2]! });
  }
  return out;
}

/** A whole country_availability_descriptor: the service is meant for `country` (ISO 3166
 *  alpha-3, e.g. "FRA"). */
export function countryAvailabilityDescriptor(country: string): Buffer {
  const code = Buffer.from(country.toUpperCase().padEnd(3, ' ').slice(0, 3), 'latin1');
  return buildDescriptors([
    { tag: DESCRIPTOR_COUNTRY_AVAILABILITY, data: Buffer.concat([Buffer.from([0xff]), code]) },
  ]);
}
