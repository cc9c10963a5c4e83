// The scan of one transponder from its sections (PAT, PMTs, SDT, NIT), and the NIT delivery
// descriptors read back as adapter tuning members (satellite, cable, terrestrial), table-driven.
import t from 'tap';
import { transponderOf } from '../../src/dvb/delivery.ts';
import { TransponderScan } from '../../src/dvb/scan.ts';
import { buildDescriptors, buildPat, buildPmt } from '../../src/mpegts/psi.ts';
import { buildSdt, buildServiceDescriptor } from '../../src/mpegts/sdt.ts';
import { terrestrialNit } from '../helpers/dvb-nit.ts';

const hex = (s: string) => Buffer.from(s.replace(/ /g, ''), 'hex');
const loop = (tag: number, body: string) => buildDescriptors([{ tag, data: hex(body) }]);

t.test('delivery descriptors → tuning members', async (t) => {
  const cases = [
    {
      name: 'satellite DVB-S2, 11778.00 MHz, vertical, 8PSK, 27.5 Msym/s, 3/4',
      // freq 01177800, orbital 0192, E pol=01 roll 00 S2 8PSK, sr 0275000 fec 3
      loop: loop(0x43, '01177800 0192 a6 0275000 3'.replace(/ /g, '')),
      system: 6,
      want: {
        type: 6,
        freq: 11778,
        'symbol-rate': 27500,
        fec: 3,
        modulation: 9,
        'lnb-polarization': 1,
        rollOff: 0,
      },
    },
    {
      name: 'satellite DVB-S, 10920.25 MHz, horizontal, 22 Msym/s, 5/6',
      loop: loop(0x43, '01092025 0130 80 0220000 4'.replace(/ /g, '')),
      system: 5,
      want: { type: 5, freq: 10920, 'symbol-rate': 22000, fec: 5, 'lnb-polarization': 0 },
    },
    {
      name: 'cable, 346 MHz, 256-QAM, 6.9 Msym/s, no inner FEC',
      loop: loop(0x44, '03460000 fff2 05 0069000 f'.replace(/ /g, '')),
      system: 1,
      want: { type: 1, freq: 346000, 'symbol-rate': 6900, fec: 0, modulation: 5 },
    },
    {
      name: 'no delivery descriptor',
      loop: Buffer.alloc(0),
      system: 3,
      want: undefined,
    },
  ];
  for (const c of cases) t.same(transponderOf(c.loop, c.system), c.want, c.name);
  t.equal(
    transponderOf(loop(0x5a, '0c71b0a0 1f 81 1a ffffffff'.replace(/ /g, '')), 5),
    undefined,
    'a terrestrial descriptor on a satellite adapter is not followed',
  );
  t.same(
    transponderOf(loop(0x5a, '031c8240 3f 81 1a ffffffff'.replace(/ /g, '')), 16),
    {
      type: 16,
      freq: 522000,
      bandwidth: 7000,
      modulation: 3,
      'hierarchy-information': 0,
      'guard-interval': 3,
      'transmission-mode': 1,
      codeRateHp: 2,
      codeRateLp: 1,
    },
    'terrestrial on a DVB-T2 adapter: 7 MHz',
  );
});

t.test(
  'one transponder: services with names, scrambling, PIDs; the network it announces',
  async (t) => {
    const scan = new TransponderScan(3);
    const sd = (name: string, type = 1) =>
      buildServiceDescriptor({
        serviceType: type,
        provider: Buffer.from('Sluice'),
        name: Buffer.from(name),
      });
    scan.section(
      0,
      0x00,
      buildPat({
        transportStreamId: 5,
        version: 0,
        currentNext: true,
        networkPid: 0x10,
        programs: [
          { programNumber: 101, pid: 0x1000 },
          { programNumber: 102, pid: 0x1001 },
        ],
      }),
    );
    t.notOk(scan.complete, 'PMTs, SDT and NIT still missing');
    const pmt = (pnr: number, ca: boolean) =>
      buildPmt({
        programNumber: pnr,
        version: 0,
        currentNext: true,
        pcrPid: 0x100,
        programInfo: ca ? loop(0x09, '0b000fff') : Buffer.alloc(0),
        streams: [
          { streamType: 0x1b, pid: pnr * 2, descriptors: Buffer.alloc(0) },
          { streamType: 0x0f, pid: pnr * 2 + 1, descriptors: Buffer.alloc(0) },
        ],
      });
    scan.section(0x1000, 0x02, pmt(101, false));
    scan.section(0x1001, 0x02, pmt(102, true));
    scan.section(0x1002, 0x02, pmt(103, false)); // not in the PAT: ignored
    scan.section(
      0x11,
      0x42,
      buildSdt({
        actual: true,
        transportStreamId: 5,
        originalNetworkId: 0x2000,
        version: 0,
        currentNext: true,
        services: [
          {
            serviceId: 101,
            eitSchedule: false,
            eitPresentFollowing: true,
            runningStatus: 4,
            freeCaMode: false,
            descriptors: sd('One'),
          },
          {
            serviceId: 102,
            eitSchedule: false,
            eitPresentFollowing: true,
            runningStatus: 4,
            freeCaMode: false,
            descriptors: sd('Two', 2),
          },
        ],
      }),
    );
    t.notOk(scan.complete, 'NIT still missing');
    scan.section(
      0x10,
      0x40,
      terrestrialNit(0x2000, 'Sluice Net', [
        { tsid: 5, kHz: 602000 },
        { tsid: 6, kHz: 610000 },
      ]),
    );
    t.ok(scan.complete);
    const r = scan.result();
    t.equal(r.transportStreamId, 5);
    t.equal(r.originalNetworkId, 0x2000);
    t.equal(r.networkName?.toString(), 'Sluice Net');
    t.same(
      r.services.map((s) => [
        s.pnr,
        s.name.toString(),
        s.provider.toString(),
        s.type,
        s.scrambled,
        s.pmtPid,
        s.pids,
      ]),
      [
        [101, 'One', 'Sluice', 1, false, 0x1000, [202, 203]],
        [102, 'Two', 'Sluice', 2, true, 0x1001, [204, 205]],
      ],
    );
    t.same(
      r.network.map((n) => n.freq),
      [602000, 610000],
    );
    t.match(r.network[1], {
      type: 3,
      bandwidth: 8000,
      modulation: 3,
      'guard-interval': 3,
      'transmission-mode': 1,
    });
  },
);
