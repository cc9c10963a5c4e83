// SDT byte for byte: a hand-written section as ffmpeg writes it, parse ↔ build, the service
// descriptor, and the test helper's SDT read back.
import t from 'tap';
import { parseDescriptors, sectionCrcOk } from '../../src/mpegts/psi.ts';
import {
  buildSdt,
  buildServiceDescriptor,
  parseSdt,
  parseServiceDescriptor,
  RUNNING_STATUS_RUNNING,
  type Sdt,
  SERVICE_TYPE_DIGITAL_TV,
} from '../../src/mpegts/sdt.ts';
import { sdt as helperSdt } from '../helpers/ts-craft.ts';

const hex = (s: string) => Buffer.from(s.replaceAll(' ', ''), 'hex');
/** ffmpeg's SDT for `-metadata service_provider=Test -metadata service_name=Sluice`. */
const FFMPEG_SDT = hex(
  '42 f020 0001 c1 00 00 ff01 ff 0001 fc 800f 48 0d 01 04 54657374 06 536c75696365 505bd25b',
);

t.test('parse ffmpeg’s SDT and build it back byte for byte', async (t) => {
  t.ok(sectionCrcOk(FFMPEG_SDT));
  const s = parseSdt(FFMPEG_SDT);
  t.equal(s.actual, true);
  t.equal(s.transportStreamId, 1);
  t.equal(s.originalNetworkId, 0xff01, 'ffmpeg’s default original_network_id');
  t.equal(s.services.length, 1);
  const service = s.services[0]!;
  t.equal(service.serviceId, 1);
  t.equal(service.runningStatus, RUNNING_STATUS_RUNNING);
  t.equal(service.freeCaMode, false);
  t.equal(service.eitSchedule, false);
  t.equal(service.eitPresentFollowing, false);
  const [d] = parseDescriptors(service.descriptors);
  const sd = parseServiceDescriptor(d!.data)!;
  t.equal(sd.serviceType, SERVICE_TYPE_DIGITAL_TV);
  t.equal(sd.provider.toString('latin1'), 'Test');
  t.equal(sd.name.toString('latin1'), 'Sluice');
  t.same(buildSdt(s), FFMPEG_SDT);
});

t.test('a round trip with flags, two services and an SDT other', async (t) => {
  const descriptor = (name: string) =>
    buildServiceDescriptor({
      serviceType: SERVICE_TYPE_DIGITAL_TV,
      provider: Buffer.from('P'),
      name: Buffer.from(name),
    });
  const table: Sdt = {
    actual: false,
    transportStreamId: 0x2222,
    originalNetworkId: 0x3333,
    version: 7,
    currentNext: true,
    services: [
      {
        serviceId: 10,
        eitSchedule: true,
        eitPresentFollowing: true,
        runningStatus: 1,
        freeCaMode: true,
        descriptors: descriptor('one'),
      },
      {
        serviceId: 0xfffe,
        eitSchedule: false,
        eitPresentFollowing: true,
        runningStatus: RUNNING_STATUS_RUNNING,
        freeCaMode: false,
        descriptors: descriptor('two'),
      },
    ],
  };
  const s = buildSdt(table);
  t.equal(s[0], 0x46, 'SDT other');
  t.equal(s.subarray(11, 16).toString('hex'), '000aff3009', 'flags, status and loop length');
  t.same(parseSdt(s), table);
});

t.test('the test helper’s SDT reads back', async (t) => {
  const s = parseSdt(helperSdt([{ id: 5, name: 'News', provider: 'Sluice' }]));
  const sd = parseServiceDescriptor(parseDescriptors(s.services[0]!.descriptors)[0]!.data)!;
  t.equal(s.services[0]!.serviceId, 5);
  t.equal(sd.name.toString('latin1'), 'News');
  t.equal(sd.provider.toString('latin1'), 'Sluice');
});

t.test('a service descriptor cut short is not read', async (t) => {
  t.equal(parseServiceDescriptor(hex('01 04 5465')), undefined);
  t.equal(parseServiceDescriptor(hex('01 00 05 4142')), undefined);
  t.same(parseServiceDescriptor(hex('01 00 00'))?.name.length, 0);
});
