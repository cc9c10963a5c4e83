// NIT actual sections with terrestrial delivery descriptors (EN 300 468 6.2.13.4), for the
// scanner's tests: the network a fake transponder announces.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { buildNit, networkNameDescriptor } from '../../src/mpegts/nit.ts';
import { NIT_PID, PAT_PID, pid, pusi } from '../../src/mpegts/packet.ts';
import { buildDescriptors } from '../../src/mpegts/psi.ts';
import { makeMpts } from './mpts.ts';
import { PKT, psiPackets } from './ts-craft.ts';

/** A terrestrial_delivery_system_descriptor: `kHz`, 8 MHz, 64-QAM, non-hierarchical, 1/4
 *  guard interval, 8k. */
export function terrestrialDescriptor(kHz: number): Buffer {
  const d = Buffer.alloc(11, 0xff);
  d.writeUInt32BE(kHz * 100, 0); // 10 Hz units
  d[4] = (0 << 5) | 0x1f; // 8 MHz, priority, no time slicing / MPE-FEC, reserved
  d[5] = (2 << 6) | (0 << 3) | 1; // 64-QAM, non-hierarchical, HP 2/3
  d[6] = (0 << 5) | (3 << 3) | (1 << 1); // LP 1/2, guard 1/4, 8k, no other frequencies
  return buildDescriptors([{ tag: 0x5a, data: d }]);
}

/** NIT actual of network `networkId` named `name`, one transport stream per frequency. */
export function terrestrialNit(
  networkId: number,
  name: string,
  muxes: { tsid: number; kHz: number }[],
): Buffer {
  return buildNit({
    actual: true,
    networkId,
    version: 0,
    currentNext: true,
    descriptors: networkNameDescriptor(Buffer.from(name, 'latin1')),
    transportStreams: muxes.map((m) => ({
      transportStreamId: m.tsid,
      originalNetworkId: networkId,
      descriptors: terrestrialDescriptor(m.kHz),
    })),
  });
}

/** A satellite_delivery_system_descriptor (EN 300 468 6.2.13.2) for DVB-S2 at 19.2° E: `mhz`,
 *  polarization 0 horizontal / 1 vertical, roll-off 0.35, `psk8` 8PSK (else QPSK), `ksym`
 *  ksym/s, FEC_inner code `fec` (Table 35: 2 = 2/3, 3 = 3/4). */
export function satelliteDescriptor(
  mhz: number,
  pol: 0 | 1,
  psk8: boolean,
  ksym: number,
  fec: number,
): Buffer {
  const digits = (n: number, count: number) => n.toString().padStart(count, '0');
  const f = digits(mhz * 100, 8); // 10 kHz units
  const sr = digits(ksym * 10, 7); // 100 sym/s units
  const d = Buffer.from(
    `${f}0192${(0x80 | (pol << 5) | 0x04 | (psk8 ? 2 : 1)).toString(16)}${sr}${fec}`,
    'hex',
  );
  return buildDescriptors([{ tag: 0x43, data: d }]);
}

/** NIT actual announcing satellite transponders. */
export function satelliteNit(
  networkId: number,
  name: string,
  muxes: { tsid: number; mhz: number; pol: 0 | 1; psk8: boolean; ksym: number; fec: number }[],
): Buffer {
  return buildNit({
    actual: true,
    networkId,
    version: 0,
    currentNext: true,
    descriptors: networkNameDescriptor(Buffer.from(name, 'latin1')),
    transportStreams: muxes.map((m) => ({
      transportStreamId: m.tsid,
      originalNetworkId: networkId,
      descriptors: satelliteDescriptor(m.mhz, m.pol, m.psk8, m.ksym, m.fec),
    })),
  });
}

/**
 * An MPTS of `programmes` (H.264 + AAC, `seconds` long, made by ./mpts.ts) at `file` with `nit`
 * sent after every PAT, as a transponder of the network would carry it; returns its bit rate
 * (for the fake layer's pacing).
 */
export function transponderWithNit(
  file: string,
  programmes: { pnr: number; title: string }[],
  nit: Buffer,
  seconds: number,
): number {
  makeMpts(
    `${file}.plain`,
    programmes.map((p) => ({ ...p, video: 'libx264' as const, audio: 'aac' as const })),
    seconds,
    [],
  );
  const ts = readFileSync(`${file}.plain`);
  const cc = { n: 0 };
  const out: Buffer[] = [];
  for (let o = 0; o + PKT <= ts.length; o += PKT) {
    out.push(ts.subarray(o, o + PKT));
    if (pid(ts, o) === PAT_PID && pusi(ts, o)) out.push(...psiPackets(NIT_PID, [nit], cc));
  }
  writeFileSync(file, Buffer.concat(out));
  return Math.round((statSync(file).size * 8) / seconds);
}
