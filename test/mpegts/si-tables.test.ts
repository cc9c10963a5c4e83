// The SI tables the muxer builds, byte for byte and parsed back: NIT with network_name and
// service_list, country_availability, TDT and TOT from a clock (read back by the guide's
// parser), EIT readdressed, and PCR writing on the 2^33 × 300 circle.
import t from 'tap';
import { parseTimeSection } from '../../src/epg/tot.ts';
import { eitAddress, readdressEit } from '../../src/mpegts/eit.ts';
import {
  buildNit,
  countryAvailabilityDescriptor,
  DESCRIPTOR_NETWORK_NAME,
  DESCRIPTOR_SERVICE_LIST,
  networkNameDescriptor,
  parseNit,
  parseServiceList,
  serviceListDescriptor,
} from '../../src/mpegts/nit.ts';
import { PCR_WRAP, pcrDiff, readPcr, writePcr } from '../../src/mpegts/pcr.ts';
import { parseDescriptors, sectionCrcOk } from '../../src/mpegts/psi.ts';
import { buildTdt, buildTot, mjdUtc } from '../../src/mpegts/time-tables.ts';
import { packet, section } from '../helpers/ts-craft.ts';

t.test('NIT: network name and service list, parsed back, CRC good', async (t) => {
  const s = buildNit({
    actual: true,
    networkId: 0x1234,
    version: 3,
    currentNext: true,
    descriptors: networkNameDescriptor(Buffer.from('Sluice Net')),
    transportStreams: [
      {
        transportStreamId: 7,
        originalNetworkId: 0x1234,
        descriptors: serviceListDescriptor([
          { serviceId: 101, serviceType: 1 },
          { serviceId: 102, serviceType: 2 },
        ]),
      },
    ],
  });
  t.ok(sectionCrcOk(s));
  t.equal(s[0], 0x40);
  t.equal(s[1]! & 0xf0, 0xf0, 'SI flags');
  const n = parseNit(s);
  t.equal(n.networkId, 0x1234);
  t.equal(n.version, 3);
  const [name] = parseDescriptors(n.descriptors);
  t.equal(name!.tag, DESCRIPTOR_NETWORK_NAME);
  t.equal(name!.data.toString('latin1'), 'Sluice Net');
  t.equal(n.transportStreams.length, 1);
  const ts = n.transportStreams[0]!;
  t.same([ts.transportStreamId, ts.originalNetworkId], [7, 0x1234]);
  const [list] = parseDescriptors(ts.descriptors);
  t.equal(list!.tag, DESCRIPTOR_SERVICE_LIST);
  t.same(parseServiceList(list!.data), [
    { serviceId: 101, serviceType: 1 },
    { serviceId: 102, serviceType: 2 },
  ]);
  // By hand: network_descriptors_length 12, name descriptor, loop length 6 + 8.
  t.same(
    s.subarray(8, 8 + 2 + 12 + 2 + 6).toString('hex'),
    'f00c400a536c75696365204e6574f00e00071234f008',
  );
});

t.test('country_availability_descriptor', async (t) => {
  t.same(countryAvailabilityDescriptor('fra').toString('hex'), '4904ff465241');
});

t.test('TDT and TOT from a clock, read back by the guide parser', async (t) => {
  const at = Date.UTC(2026, 10, 25, 13, 45, 9, 700);
  t.same(mjdUtc(at).toString('hex'), 'eb7f134509'.replace('eb7f', mjdHex(at)));
  const tdt = buildTdt(at);
  t.equal(tdt.length, 8);
  t.same(tdt.subarray(0, 3).toString('hex'), '707005');
  t.equal(parseTimeSection(tdt).utc, Math.floor(at / 1000));
  const tot = buildTot(at);
  t.ok(sectionCrcOk(tot), 'TOT CRC');
  t.equal(tot[0], 0x73);
  const p = parseTimeSection(tot);
  t.equal(p.utc, Math.floor(at / 1000));
  t.same(p.offsets, []);
});

function mjdHex(ms: number): string {
  const mjd = Math.floor(ms / 86_400_000) + 40587;
  return mjd.toString(16).padStart(4, '0');
}

t.test('EIT readdressed: service, transport stream and network ids, new CRC', async (t) => {
  const body = Buffer.from([0, 1, 0xff, 0x01, 0, 0x4e, 1, 2, 3, 4, 5]);
  const eit = section(0x4e, 1, body);
  t.ok(sectionCrcOk(eit));
  const out = readdressEit(eit, { serviceId: 102, transportStreamId: 9, originalNetworkId: 77 });
  t.ok(sectionCrcOk(out));
  t.same(eitAddress(out), { serviceId: 102, transportStreamId: 9, originalNetworkId: 77 });
  t.same(out.subarray(12, out.length - 4), eit.subarray(12, eit.length - 4), 'events untouched');
  t.equal(eitAddress(eit).serviceId, 1, 'the source section is not changed');
});

t.test('PCR written and read back, across the wrap', async (t) => {
  const p = packet({ pid: 0x100, pcr: 0, payload: Buffer.alloc(10) });
  for (const v of [0, 1, 299, 300, 27_000_000 * 3600 + 123, PCR_WRAP - 1, PCR_WRAP + 5, -1]) {
    writePcr(p, 0, v);
    t.equal(readPcr(p, 0), ((v % PCR_WRAP) + PCR_WRAP) % PCR_WRAP, `value ${v}`);
  }
  t.equal(pcrDiff(2, PCR_WRAP - 3), 5, 'forward across the wrap');
  t.equal(pcrDiff(PCR_WRAP - 3, 2), -5);
});
