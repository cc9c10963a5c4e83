// DVB Event Information Table (EN 300 468 5.2.4) sections carried into another multiplex: the
// events stay as they are, the section is readdressed to the service and transport stream it
// has there (service_id, transport_stream_id, original_network_id) and its CRC_32 recomputed.
import {
  EIT_PF_ACTUAL_TABLE_ID,
  EIT_SCHEDULE_ACTUAL_FIRST_TABLE_ID,
  EIT_SCHEDULE_ACTUAL_LAST_TABLE_ID,
  finishSection,
} from './psi.ts';

const TSID_OFFSET = 8;
const ONID_OFFSET = 10;
/** Through last_table_id: the EIT's fixed part before the events. */
export const EIT_FIXED_SIZE = 14;

export interface EitAddress {
  serviceId: number;
  transportStreamId: number;
  originalNetworkId: number;
}

/** table_id is an EIT of the actual transport stream: present/following or schedule. */
export function isEitActual(tableId: number): boolean {
  return (
    tableId === EIT_PF_ACTUAL_TABLE_ID ||
    (tableId >= EIT_SCHEDULE_ACTUAL_FIRST_TABLE_ID && tableId <= EIT_SCHEDULE_ACTUAL_LAST_TABLE_ID)
  );
}

/** The EIT section's address (service_id and the transport stream it names). */
export function eitAddress(section: Buffer): EitAddress {
  return {
    serviceId: section.readUInt16BE(3),
    transportStreamId: section.readUInt16BE(TSID_OFFSET),
    originalNetworkId: section.readUInt16BE(ONID_OFFSET),
  };
}

/** A copy of the whole EIT section `section` readdressed to `to`, CRC_32 recomputed. */
export function readdressEit(section: Buffer, to: EitAddress): Buffer {
  const s = Buffer.from(section);
  s.writeUInt16BE(to.serviceId, 3);
  s.writeUInt16BE(to.transportStreamId, TSID_OFFSET);
  s.writeUInt16BE(to.originalNetworkId, ONID_OFFSET);
  return finishSection(s);
}
