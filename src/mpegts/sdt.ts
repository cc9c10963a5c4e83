// DVB Service Description Table (EN 300 468 5.2.3) parse and build, and its service_descriptor
// (6.2.33). Text fields stay bytes: their character set (Annex A) is the caller's business.
import {
  buildDescriptors,
  buildSection,
  CRC_SIZE,
  DESCRIPTOR_SERVICE,
  LONG_HEADER_SIZE,
  parseSectionHeader,
  SDT_ACTUAL_TABLE_ID,
  SDT_OTHER_TABLE_ID,
  SECTION_PREFIX_SIZE,
  SI_SECTION_FLAGS,
  sectionLength,
} from './psi.ts';

/** original_network_id and a reserved byte follow the long header. */
const SDT_FIXED_SIZE = LONG_HEADER_SIZE + 3;
const SERVICE_HEADER_SIZE = 5;
const EIT_SCHEDULE_FLAG = 0x02;
const EIT_PRESENT_FOLLOWING_FLAG = 0x01;
const FREE_CA_FLAG = 0x10;
const RESERVED_FUTURE_USE = 0xfc;
/** running_status 4: running (Table 6). */
export const RUNNING_STATUS_RUNNING = 4;
/** service_type 0x01: digital television service (Table 87). */
export const SERVICE_TYPE_DIGITAL_TV = 0x01;

export interface SdtService {
  serviceId: number;
  eitSchedule: boolean;
  eitPresentFollowing: boolean;
  runningStatus: number;
  freeCaMode: boolean;
  /** The service's descriptor loop (see parseDescriptors). */
  descriptors: Buffer;
}

export interface Sdt {
  /** table 0x42 (this transport stream) rather than 0x46 (another one). */
  actual: boolean;
  transportStreamId: number;
  originalNetworkId: number;
  version: number;
  currentNext: boolean;
  services: SdtService[];
}

export function parseSdt(section: Buffer): Sdt {
  const h = parseSectionHeader(section);
  const sdt: Sdt = {
    actual: h.tableId === SDT_ACTUAL_TABLE_ID,
    transportStreamId: h.tableIdExtension,
    originalNetworkId: section.readUInt16BE(LONG_HEADER_SIZE),
    version: h.version,
    currentNext: h.currentNext,
    services: [],
  };
  const end = Math.min(section.length, SECTION_PREFIX_SIZE + sectionLength(section) - CRC_SIZE);
  for (let o = SDT_FIXED_SIZE; o + SERVICE_HEADER_SIZE <= end; ) {
    const loopLen = ((section[o + 3]! & 0x0f) << 8) | section[o + 4]!;
    const loop = o + SERVICE_HEADER_SIZE;
    sdt.services.push({
      serviceId: section.readUInt16BE(o),
      eitSchedule: (section[o + 2]! & EIT_SCHEDULE_FLAG) !== 0,
      eitPresentFollowing: (section[o + 2]! & EIT_PRESENT_FOLLOWING_FLAG) !== 0,
      runningStatus: section[o + 3]! >> 5,
      freeCaMode: (section[o + 3]! & FREE_CA_FLAG) !== 0,
      descriptors: section.subarray(loop, Math.min(end, loop + loopLen)),
    });
    o = loop + loopLen;
  }
  return sdt;
}

export function buildSdt(sdt: Sdt): Buffer {
  const parts: Buffer[] = [
    Buffer.from([sdt.originalNetworkId >> 8, sdt.originalNetworkId & 0xff, 0xff]),
  ];
  for (const s of sdt.services) {
    const flags =
      RESERVED_FUTURE_USE |
      (s.eitSchedule ? EIT_SCHEDULE_FLAG : 0) |
      (s.eitPresentFollowing ? EIT_PRESENT_FOLLOWING_FLAG : 0);
    const loopLen = s.descriptors.length;
    const status = (s.runningStatus << 5) | (s.freeCaMode ? FREE_CA_FLAG : 0) | (loopLen >> 8);
    parts.push(
      Buffer.from([s.serviceId >> 8, s.serviceId & 0xff, flags, status, loopLen & 0xff]),
      s.descriptors,
    );
  }
  return buildSection(
    {
      tableId: sdt.actual ? SDT_ACTUAL_TABLE_ID : SDT_OTHER_TABLE_ID,
      tableIdExtension: sdt.transportStreamId,
      version: sdt.version,
      currentNext: sdt.currentNext,
      flags: SI_SECTION_FLAGS,
    },
    Buffer.concat(parts),
  );
}

export interface ServiceDescriptor {
  serviceType: number;
  provider: Buffer;
  name: Buffer;
}

/** The service_descriptor body of a descriptor loop entry, or undefined when it is cut short. */
export function parseServiceDescriptor(data: Buffer): ServiceDescriptor | undefined {
  const providerLen = data[1];
  if (providerLen === undefined || 2 + providerLen >= data.length) return undefined;
  const nameAt = 3 + providerLen;
  const nameLen = data[2 + providerLen]!;
  if (nameAt + nameLen > data.length) return undefined;
  return {
    serviceType: data[0]!,
    provider: data.subarray(2, 2 + providerLen),
    name: data.subarray(nameAt, nameAt + nameLen),
  };
}

/** A whole service_descriptor (tag, length, body), ready for a descriptor loop. */
export function buildServiceDescriptor(d: ServiceDescriptor): Buffer {
  const data = Buffer.concat([
    Buffer.from([d.serviceType, d.provider.length]),
    d.provider,
    Buffer.from([d.name.length]),
    d.name,
  ]);
  return buildDescriptors([{ tag: DESCRIPTOR_SERVICE, data }]);
}
