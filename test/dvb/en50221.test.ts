// EN 50221 coding byte for byte (TPDUs of annex A.4.1, SPDUs of 7.2.7, APDUs of 8.3–8.5, vectors
// written out from the standard's tables), then the host's stack driven through a whole CAM
// start-up by a module's bytes: transport connection, resource manager and profiles, application
// information, CA support, date-time, a CA PMT list, ca_pmt_reply, a PMT update; a CAM that
// stops answering fails the connection.
import t from 'tap';
import {
  A,
  apdu,
  dateTime,
  openSessionResponse,
  parseApplicationInfo,
  parseCaInfo,
  parseCaPmtReply,
  parseSpdu,
  parseTpdus,
  profile,
  RESOURCE,
  readLength,
  sessionData,
  T,
  tpdu,
} from '../../src/dvb/en50221/codec.ts';
import { CiHost, POLL_MS, RESPONSE_TIMEOUT_MS } from '../../src/dvb/en50221/host.ts';
import type { Pmt } from '../../src/mpegts/psi.ts';

const hex = (b: Buffer) => b.toString('hex').replace(/(..)/g, '$1 ').trim();
const bytes = (s: string) => Buffer.from(s.replace(/ /g, ''), 'hex');

t.test('TPDUs as the ca device frames them (slot, t_c_id, TPDU)', async (t) => {
  t.equal(hex(tpdu(0, 1, T.createTc)), '00 01 82 01 01', 'create_t_c');
  t.equal(hex(tpdu(0, 1, T.dataLast)), '00 01 a0 01 01', 'a poll: T_data_last without data');
  t.equal(hex(tpdu(0, 1, T.rcv)), '00 01 81 01 01', 'T_RCV');
  t.equal(
    hex(tpdu(1, 1, T.dataLast, Buffer.alloc(200))).slice(0, 20),
    '01 01 a0 81 c9 01 00',
    'a long body: length 201 in the long form',
  );
  t.same(
    parseTpdus(bytes('00 01 83 01 01 80 02 01 80')),
    {
      slot: 0,
      tpdus: [
        { tag: T.ctcReply, tcid: 1, body: Buffer.alloc(0) },
        { tag: T.sb, tcid: 1, body: bytes('80') },
      ],
    },
    'C_T_C_Reply then T_SB with data available',
  );
  t.equal(parseTpdus(bytes('00 01 a0 05 01 91')), null, 'a truncated TPDU');
  t.same(readLength(bytes('82 01 00'), 0), { len: 256, at: 3 });
  t.same(readLength(bytes('7f'), 0), { len: 127, at: 1 });
});

t.test('SPDUs', async (t) => {
  t.same(parseSpdu(bytes('91 04 00 01 00 41')), { tag: 0x91, resource: RESOURCE.resourceManager });
  t.equal(
    hex(openSessionResponse(0, RESOURCE.resourceManager, 1)),
    '92 07 00 00 01 00 41 00 01',
    'open_session_response: status, resource id, session number',
  );
  t.equal(hex(sessionData(3, apdu(A.caInfoEnq))), '90 02 00 03 9f 80 30 00');
  t.same(parseSpdu(bytes('90 02 00 02 9f 80 21 02 01 02 9f 80 31 00')), {
    tag: 0x90,
    session: 2,
    apdus: [
      { tag: A.applicationInfo, body: bytes('01 02') },
      { tag: A.caInfo, body: Buffer.alloc(0) },
    ],
  });
  t.same(parseSpdu(bytes('95 02 00 04')), { tag: 0x95, session: 4 }, 'close_session_request');
});

t.test('APDUs', async (t) => {
  t.equal(
    hex(profile([RESOURCE.resourceManager, RESOURCE.caSupport])),
    '9f 80 11 08 00 01 00 41 00 03 00 41',
  );
  t.same(parseApplicationInfo(bytes('01 4a 20 01 02 04 46 61 6b 65')), {
    type: 1,
    manufacturer: 0x4a20,
    code: 0x0102,
    menu: 'Fake',
  });
  t.same(parseCaInfo(bytes('0b 00 17 02')), [0x0b00, 0x1702]);
  t.same(parseCaPmtReply(bytes('00 65 c7 81')), {
    programNumber: 101,
    enable: 1,
    streams: [],
  });
  t.same(
    parseCaPmtReply(bytes('00 66 c7 00 e1 00 f1')),
    { programNumber: 102, enable: null, streams: [{ pid: 0x100, enable: 0x71 }] },
    'CA_enable per stream only',
  );
  // EN 300 468 annex C's example: 1993-10-13 12:45:00 is MJD 49273 (0xc079).
  t.equal(hex(dateTime(Date.UTC(1993, 9, 13, 12, 45, 0))), '9f 84 41 05 c0 79 12 45 00');
});

const CA = Buffer.from([0x09, 0x04, 0x0b, 0x00, 0xe6, 0x00]);
const pmtOf = (pnr: number, version: number): Pmt => ({
  programNumber: pnr,
  version,
  currentNext: true,
  pcrPid: 0x100,
  programInfo: CA,
  streams: [{ streamType: 0x1b, pid: 0x100, descriptors: Buffer.alloc(0) }],
});

/** What the module sends: `spdu` (hex) as T_data_last, then T_SB (`more`: data available). */
const fromModule = (spdu: string, more = false) =>
  bytes(
    `00 01 ${spdu ? `a0 ${(spdu.replace(/ /g, '').length / 2 + 1).toString(16).padStart(2, '0')} 01 ${spdu} ` : ''}80 02 01 ${more ? '80' : '00'}`,
  );

t.test('the host through a CAM start-up', async (t) => {
  const sent: string[] = [];
  const host = new CiHost(
    0,
    [101, 102],
    (b) => sent.push(hex(b)),
    () => Date.UTC(2026, 0, 1),
  );
  let now = 0;
  const exchange = (module: Buffer) => {
    sent.length = 0;
    host.receive(module, now);
    return sent.slice();
  };
  host.start(now);
  t.same(sent, ['00 01 82 01 01'], 'create_t_c');
  t.same(exchange(bytes('00 01 83 01 01 80 02 01 80')), ['00 01 81 01 01'], 'data waits: T_RCV');
  t.same(
    exchange(fromModule('91 04 00 01 00 41')),
    ['00 01 a0 0a 01 92 07 00 00 01 00 41 00 01'],
    'the module opens the resource manager: session 1',
  );
  t.same(exchange(fromModule('')), ['00 01 a0 09 01 90 02 00 01 9f 80 10 00'], 'profile_enq');
  t.same(exchange(fromModule('', true)), ['00 01 81 01 01']);
  t.same(
    exchange(fromModule('90 02 00 01 9f 80 11 00')),
    ['00 01 a0 09 01 90 02 00 01 9f 80 12 00'],
    'the module has no resources; profile_change',
  );
  t.same(exchange(fromModule('', true)), ['00 01 81 01 01']);
  t.same(
    exchange(fromModule('90 02 00 01 9f 80 10 00')),
    ['00 01 a0 19 01 90 02 00 01 9f 80 11 10 00 01 00 41 00 02 00 41 00 03 00 41 00 24 00 41'],
    "the module asks the host's profile",
  );
  t.same(exchange(fromModule('', true)), ['00 01 81 01 01']);
  t.same(
    exchange(fromModule('91 04 00 02 00 43', true)),
    ['00 01 81 01 01'],
    'application information version 3: accepted, but the module has more first',
  );
  t.same(exchange(fromModule('91 04 00 03 00 41')), ['00 01 a0 0a 01 92 07 00 00 02 00 43 00 02']);
  for (const want of [
    '00 01 a0 09 01 90 02 00 02 9f 80 20 00', // application_info_enq
    '00 01 a0 0a 01 92 07 00 00 03 00 41 00 03', // CA support: session 3
    '00 01 a0 09 01 90 02 00 03 9f 80 30 00', // ca_info_enq
  ])
    t.same(exchange(fromModule('')), [want]);
  t.same(exchange(fromModule('')), [], 'nothing to send: the next poll waits');
  now += POLL_MS;
  host.tick(now);
  t.same(sent, ['00 01 a0 01 01'], 'the poll after 100 ms');
  host.setPmt(pmtOf(101, 3));
  t.same(exchange(fromModule('', true)), ['00 01 81 01 01'], 'no CA PMT before ca_info');
  exchange(fromModule('90 02 00 02 9f 80 21 0e 01 4a 20 01 01 08 46 61 6b 65 20 43 41 4d', true));
  t.same(host.status().application, {
    type: 1,
    manufacturer: 0x4a20,
    code: 0x0101,
    menu: 'Fake CAM',
  });
  const query = '9f 80 32 12 03 00 65 c7 f0 07 03 09 04 0b 00 e6 00 1b e1 00 f0 00';
  t.same(
    exchange(fromModule('90 02 00 03 9f 80 31 04 0b 00 17 02')),
    [`00 01 a0 1b 01 90 02 00 03 ${query}`],
    'ca_info: the one known programme as list "only", a query first',
  );
  t.same(host.status().caSystemIds, [0x0b00, 0x1702]);
  t.same(
    exchange(fromModule('')),
    [`00 01 a0 1b 01 90 02 00 03 ${query.replace('f0 07 03', 'f0 07 01')}`],
    'then ok_descrambling',
  );
  t.equal(host.status().programmes[0]!.state, 'sent');
  t.same(exchange(fromModule('', true)), ['00 01 81 01 01']);
  exchange(fromModule('90 02 00 03 9f 80 33 04 00 65 c7 81'));
  t.match(host.status().programmes, [
    { pnr: 101, state: 'descrambling', caEnable: 1, pmtVersion: 3 },
    { pnr: 102, state: 'waiting for PMT' },
  ]);
  host.setPmt(pmtOf(102, 0));
  t.match(
    exchange(fromModule('')),
    [/^00 01 a0 1b 01 90 02 00 03 9f 80 32 12 04 00 66 c1 f0 07 03/],
    'a later programme: add',
  );
  exchange(fromModule(''));
  t.same(exchange(fromModule('', true)), ['00 01 81 01 01']);
  exchange(fromModule('90 02 00 03 9f 80 33 04 00 66 c1 f1'));
  t.match(host.status().programmes[1], {
    state: 'refused',
    reason: 'descrambling not possible: no entitlement',
  });
  host.setPmt(pmtOf(101, 4));
  t.match(exchange(fromModule('')), [/9f 80 32 12 05 00 65 c9/], 'a new PMT version: update');
  t.equal(host.status().caPmtsSent, 6);

  // date-time: opened by the module, answered at once and every response_interval.
  exchange(fromModule(''));
  t.same(exchange(fromModule('', true)), ['00 01 81 01 01']);
  t.same(exchange(fromModule('91 04 00 24 00 41')), ['00 01 a0 0a 01 92 07 00 00 24 00 41 00 04']);
  t.same(exchange(fromModule('', true)), ['00 01 81 01 01']);
  t.same(
    exchange(fromModule('90 02 00 04 9f 84 40 01 02')),
    ['00 01 a0 0e 01 90 02 00 04 9f 84 41 05 ee 71 00 00 00'],
    'date_time now (2026-01-01 is MJD 61041)',
  );
  exchange(fromModule(''));
  now += 2000;
  sent.length = 0;
  host.tick(now);
  t.same(sent, ['00 01 a0 0e 01 90 02 00 04 9f 84 41 05 ee 71 00 00 00'], 'again after 2 s');

  sent.length = 0;
  now += RESPONSE_TIMEOUT_MS;
  host.tick(now);
  t.ok(host.failed, 'an unanswered TPDU fails the connection');
  t.match(host.error, /did not answer/);
});

t.test('a session to a resource the host does not offer is refused', async (t) => {
  const sent: string[] = [];
  const host = new CiHost(
    0,
    [],
    (b) => sent.push(hex(b)),
    () => 0,
  );
  host.start(0);
  host.receive(bytes('00 01 83 01 01 80 02 01 80'), 0);
  sent.length = 0;
  host.receive(fromModule('91 04 00 40 00 41'), 0); // MMI
  t.same(sent, ['00 01 a0 0a 01 92 07 f0 00 40 00 41 00 00']);
});
