// Invalid configs, table-driven: each must be refused with one precise error (rule, pointer,
// message and line:column of the offending text).
import t from 'tap';
import { loadConfigText } from '../../src/config/store.ts';
import { ConfigError, type ConfigIssue } from '../../src/config/types.ts';

interface Case {
  name: string;
  text: string;
  rule: string;
  pointer: string;
  message: string | RegExp;
  /** Text whose first occurrence is where the issue points (line:column), or explicit. */
  at: string | { line: number; column: number };
}

const V = '"x-svc-version": "2.0.2.361"';
const S = (extra: string) => `{${V}, "stream": [${extra}]}`;

const CASES: Case[] = [
  {
    name: 'syntax error: trailing comma',
    text: '{\n  "stream": [\n    {"id": 1,}\n  ]\n}\n',
    rule: 'syntax',
    pointer: '',
    message: "trailing comma before '}' (JSON allows none: remove the comma)",
    at: { line: 3, column: 13 },
  },
  {
    name: 'syntax error: unterminated string',
    text: '{\n  "server": {"name": "a}\n}\n',
    rule: 'syntax',
    pointer: '',
    message: 'control character inside a string (escape it)',
    at: { line: 2, column: 25 },
  },
  {
    name: 'duplicate member name',
    text: '{\n  "server": {},\n  "server": {}\n}',
    rule: 'duplicate-member',
    pointer: '/server',
    message: 'duplicate member "server"',
    at: { line: 3, column: 3 },
  },
  {
    name: 'document is not an object',
    text: '[]',
    rule: 'type',
    pointer: '',
    message: 'the config must be one JSON object, got []',
    at: { line: 1, column: 1 },
  },
  {
    name: 'unknown top-level member',
    text: `{${V},\n "streams": []}`,
    rule: 'unknown-member',
    pointer: '/streams',
    message: 'unknown top-level member: "streams" (did you mean stream?)',
    at: '"streams"',
  },
  {
    name: 'wrong x-svc-version',
    text: '{"x-svc-version": "2.0.1.100", "bogus": 1}',
    rule: 'version',
    pointer: '/x-svc-version',
    message: 'x-svc-version is "2.0.1.100" but this server validates configs of version 2.0.2.361',
    at: '"2.0.1.100"',
  },
  {
    name: 'unknown member in a billing server (strict)',
    text: `{${V}, "cs": {"server": [{"id": 1, "name": "b", "password": "p", "url": "http://x", "timout": 5}]}}`,
    rule: 'unknown-member',
    pointer: '/cs/server/0/timout',
    message: 'unknown member in billing server record: "timout" (did you mean timeout?)',
    at: '"timout"',
  },
  {
    name: 'unknown member in a tuner adapter (strict)',
    text: `{${V}, "dvb-adapter": [{"id": 1, "name": "a", "type": 3, "frequency": 602000}]}`,
    rule: 'unknown-member',
    pointer: '/dvb-adapter/0/frequency',
    message: 'unknown member in tuner adapter record: "frequency"',
    at: '"frequency"',
  },
  {
    name: 'unknown member in an archive storage (strict)',
    text: `{${V}, "dvr-storage-list": {"storage": [{"id": 1, "name": "a", "dir-path": "/d", "max-usge": 80}]}}`,
    rule: 'unknown-member',
    pointer: '/dvr-storage-list/storage/0/max-usge',
    message: 'unknown member in archive storage record: "max-usge" (did you mean max-usage?)',
    at: '"max-usge"',
  },
  {
    name: 'unknown member in an EPG channel set (strict)',
    text: `{${V}, "epg-server": {"channel-set": [{"id": 1, "name": "a", "notes": "x"}]}}`,
    rule: 'unknown-member',
    pointer: '/epg-server/channel-set/0/notes',
    message: 'unknown member in epg channel set record: "notes" (did you mean note?)',
    at: '"notes"',
  },
  {
    name: 'unknown member in an EPG login (strict)',
    text: `{${V}, "epg-server": {"login": [{"id": 1, "login": "a", "password": "p", "channel": 1}]}}`,
    rule: 'unknown-member',
    pointer: '/epg-server/login/0/channel',
    message: /^unknown member in epg login record: "channel"/,
    at: '"channel"',
  },
  {
    name: 'unknown member in an EPG source (strict)',
    text: `{${V}, "epg": {"source": [{"id": 1, "name": "a", "source": "/g.xml", "url": "x"}]}}`,
    rule: 'unknown-member',
    pointer: '/epg/source/0/url',
    message: 'unknown member in epg source record: "url"',
    at: '"url"',
  },
  {
    name: 'out of range (maximum)',
    text: S('{"stream-name": "a",\n  "alert-delay": 90000}'),
    rule: 'maximum',
    pointer: '/stream/0/alert-delay',
    message: 'alert-delay must be at most 86400, got 90000',
    at: '90000',
  },
  {
    name: 'out of range (minimum)',
    text: S('{"stream-name": "a", "stream-timeout": 1000}'),
    rule: 'minimum',
    pointer: '/stream/0/stream-timeout',
    message: 'stream-timeout must be at least 1000000, got 1000',
    at: '1000}',
  },
  {
    name: 'wrong enum value',
    text: S('{"stream-name": "a", "bitrate-mode": 4}'),
    rule: 'enum',
    pointer: '/stream/0/bitrate-mode',
    message: 'bitrate-mode must be one of 0, 1, 2, 3, got 4',
    at: '4}',
  },
  {
    name: 'missing required member',
    text: S('{"id": 3, "display-name": "x"}'),
    rule: 'required',
    pointer: '/stream/0/stream-name',
    message: 'stream-name is required',
    at: '{"id": 3',
  },
  {
    name: 'one mistake, one error: a boolean for an enum of integers (type and enum fail)',
    text: S('{"stream-name": "a", "ott-hls": true}'),
    rule: 'enum',
    pointer: '/stream/0/ott-hls',
    message: 'ott-hls must be one of 0, 1, 2, 3, got true',
    at: 'true}',
  },
  {
    name: 'one mistake, one error: a member not allowed here, of the wrong type too',
    text: S('{"stream-name": "a", "mpts": true, "ott-hls": "yes"}'),
    rule: 'not-allowed',
    pointer: '/stream/0/ott-hls',
    message: 'ott-hls is not allowed here: only when mpts is false',
    at: '"ott-hls"',
  },
  {
    name: 'wrong type',
    text: S('{"stream-name": "a", "pause": "yes"}'),
    rule: 'type',
    pointer: '/stream/0/pause',
    message: 'pause must be true or false, got "yes"',
    at: '"yes"',
  },
  {
    name: 'empty required text',
    text: S('{"stream-name": ""}'),
    rule: 'minLength',
    pointer: '/stream/0/stream-name',
    message: 'stream-name must not be empty',
    at: '""',
  },
  {
    name: 'input missing the required field of its type',
    text: S('{"stream-name": "a", "input": [{"type": "hls", "preload": 2}]}'),
    rule: 'required',
    pointer: '/stream/0/input/0/uri',
    message: 'uri is required (a hls input needs it)',
    at: '{"type": "hls"',
  },
  {
    name: 'input of an unknown type',
    text: S('{"stream-name": "a", "input": [{"type": "smpte2110"}]}'),
    rule: 'enum',
    pointer: '/stream/0/input/0/type',
    message: /^type must be one of "demuxer", "dvb", .*, got "smpte2110"$/,
    at: '"smpte2110"',
  },
  {
    name: 'output missing its port',
    text: S('{"stream-name": "a", "output": [{"type": "rist", "address": "h"}]}'),
    rule: 'required',
    pointer: '/stream/0/output/0/port',
    message: 'port is required (a rist output needs it)',
    at: '{"type": "rist"',
  },
  {
    name: 'passphrase of the wrong length',
    text: S(
      '{"stream-name": "a", "input": [{"type": "prompeg", "port": 5000, "passphrase": "short"}]}',
    ),
    rule: 'pattern',
    pointer: '/stream/0/input/0/passphrase',
    message: 'passphrase must be empty or 10 to 64 characters, got "short"',
    at: '"short"',
  },
  {
    name: 'mpts-only member on an mpts stream',
    text: S('{"stream-name": "m", "mpts": true, "ott-hls": 1}'),
    rule: 'not-allowed',
    pointer: '/stream/0/ott-hls',
    message: 'ott-hls is not allowed here: only when mpts is false',
    at: '"ott-hls"',
  },
  {
    name: 'adapter member of another delivery system',
    text: `{${V}, "dvb-adapter": [{"id": 1, "name": "t", "type": 3, "symbol-rate": 27500}]}`,
    rule: 'not-allowed',
    pointer: '/dvb-adapter/0/symbol-rate',
    message: 'symbol-rate is not allowed here: only when mode 0 and type 1, 2, 5, 6 or 18',
    at: '"symbol-rate"',
  },
  {
    name: 'unequal std environment arrays',
    text: S(
      '{"stream-name": "a", "input": [{"type": "std", "std-cmd": "/bin/gen", "std-environment-name": ["A", "B"], "std-environment-value": ["1"]}]}',
    ),
    rule: 'same-length',
    pointer: '/stream/0/input/0',
    message:
      'std-environment-name, std-environment-value must have the same number of items (std-environment-name has 2, std-environment-value has 1)',
    at: '{"type": "std"',
  },
  {
    name: 'unequal rist peer arrays',
    text: S(
      '{"stream-name": "a", "input": [{"type": "rist", "rist-addr-address": ["239.1.1.1", "239.1.1.2"], "rist-addr-port": [5000]}]}',
    ),
    rule: 'same-length',
    pointer: '/stream/0/input/0',
    message:
      'rist-addr-address, rist-addr-port, rist-addr-intf, rist-addr-weight must have the same number of items (rist-addr-address has 2, rist-addr-port has 1)',
    at: '{"type": "rist"',
  },
  {
    name: 'rist output: a further receiver without its port',
    text: S(
      '{"stream-name": "a", "output": [{"type": "rist", "address": "10.0.0.1", "port": 5000, "rist-addr-address": ["10.0.1.1"]}]}',
    ),
    rule: 'same-length',
    pointer: '/stream/0/output/0',
    message:
      'rist-addr-address, rist-addr-port must have the same number of items (rist-addr-address has 1, rist-addr-port has 0)',
    at: '{"type": "rist"',
  },
  {
    name: 'rist output: weights that do not match the further receivers',
    text: S(
      '{"stream-name": "a", "output": [{"type": "rist", "address": "10.0.0.1", "port": 5000, "rist-addr-address": ["10.0.1.1"], "rist-addr-port": [5002], "rist-addr-weight": [1, 2]}]}',
    ),
    rule: 'same-length',
    pointer: '/stream/0/output/0',
    message:
      'rist-addr-address, rist-addr-weight must have the same number of items (rist-addr-address has 1, rist-addr-weight has 2)',
    at: '{"type": "rist"',
  },
  {
    name: 'unequal biss arrays',
    text: `{${V}, "dvb-adapter": [{"id": 1, "name": "s", "type": 5, "lnb-polarization": 1, "biss-pnr": [101, 102], "biss-key": ["112233445566"]}]}`,
    rule: 'same-length',
    pointer: '/dvb-adapter/0',
    message:
      'biss-pnr, biss-key must have the same number of items (biss-pnr has 2, biss-key has 1)',
    at: '{"id": 1',
  },
  {
    name: 'multiplex stream: unequal biss arrays',
    text: S(
      '{"stream-name": "m", "mpts": true, "biss-pnr": [101, 102], "biss-key": ["112233445566"]}',
    ),
    rule: 'same-length',
    pointer: '/stream/0',
    message:
      'biss-pnr, biss-key must have the same number of items (biss-pnr has 2, biss-key has 1)',
    at: '{"stream-name": "m"',
  },
  {
    name: 'multiplex stream: a biss key of the wrong length',
    text: S('{"stream-name": "m", "mpts": true, "biss-pnr": [101], "biss-key": ["1122334455"]}'),
    rule: 'pattern',
    pointer: '/stream/0/biss-key/0',
    message:
      'biss-key[0] must be 12 hex digits (BISS-1) or 16 hex digits (BISS-E), got "1122334455"',
    at: '"1122334455"',
  },
  {
    name: 'multiplex stream: a biss key that is not hex',
    text: S('{"stream-name": "m", "mpts": true, "biss-pnr": [101], "biss-key": ["11223344556G"]}'),
    rule: 'pattern',
    pointer: '/stream/0/biss-key/0',
    message: /^biss-key\[0\] must be 12 hex digits/,
    at: '"11223344556G"',
  },
  {
    name: 'multiplex stream: a T2-MI carrier target past PLP 255',
    text: S('{"stream-name": "m", "mpts": true, "biss-pnr": [-257], "biss-key": ["112233445566"]}'),
    rule: 'minimum',
    pointer: '/stream/0/biss-pnr/0',
    message:
      'biss-pnr[0] must be at least -256, got -257 (-(n+1) is the T2-MI carrier of PLP n, n 0..255)',
    at: '-257]',
  },
  {
    name: 'multiplex stream: a biss target 0',
    text: S(
      '{"stream-name": "m", "mpts": true, "biss-pnr": [101, 0], "biss-key": ["112233445566", "112233445566"]}',
    ),
    rule: 'not',
    pointer: '/stream/0/biss-pnr/1',
    message:
      'biss-pnr[1] must be a programme number (1..65535) or a T2-MI carrier target (-(n+1)), got 0',
    at: '0]',
  },
  {
    name: 'biss on a stream that is not a multiplex',
    text: S('{"stream-name": "a", "biss-pnr": [101]}'),
    rule: 'not-allowed',
    pointer: '/stream/0/biss-pnr',
    message: 'biss-pnr is not allowed here: only when mpts is true',
    at: '"biss-pnr"',
  },
  {
    name: 'adapter: a biss key of the wrong length',
    text: `{${V}, "dvb-adapter": [{"id": 1, "name": "s", "type": 5, "lnb-polarization": 1, "biss-pnr": [101], "biss-key": ["11223344"]}]}`,
    rule: 'pattern',
    pointer: '/dvb-adapter/0/biss-key/0',
    message: 'biss-key[0] must be 12 hex digits (BISS-1) or 16 hex digits (BISS-E), got "11223344"',
    at: '"11223344"',
  },
  {
    name: 'repeated channel-set id in a stream',
    text: `{${V}, "epg-server": {"channel-set": [{"id": 1, "name": "a"}]}, "stream": [{"stream-name": "a", "epg-channel-set": [1, 1]}]}`,
    rule: 'uniqueItems',
    pointer: '/stream/0/epg-channel-set',
    message: 'epg-channel-set must not repeat a value (items 0 and 1 are equal)',
    at: '[1, 1]',
  },
  {
    name: 'demuxer refers to a missing stream',
    text: S('{"stream-name": "a", "input": [{"type": "demuxer", "mpts-id": 7}]}'),
    rule: 'reference',
    pointer: '/stream/0/input/0/mpts-id',
    message: 'mpts-id 7 refers to no multiplex stream (src 0) (no stream has id 7)',
    at: '7}',
  },
  {
    name: 'demuxer refers to a stream that is not mpts',
    text: S(
      '{"id": 1, "stream-name": "a"}, {"id": 2, "stream-name": "b", "input": [{"type": "demuxer", "mpts-id": 1}]}',
    ),
    rule: 'reference',
    pointer: '/stream/1/input/0/mpts-id',
    message: 'mpts-id 1 refers to stream "a", which is not a multiplex (mpts) stream',
    at: '1}]',
  },
  {
    name: 'transcoder refers to a missing stream',
    text: S('{"stream-name": "a", "input": [{"type": "transcoder", "decoder-id": 9}]}'),
    rule: 'reference',
    pointer: '/stream/0/input/0/decoder-id',
    message: 'decoder-id 9 refers to no stream (no stream has id 9)',
    at: '9}',
  },
  {
    name: 'transcoder refers to a multiplex stream',
    text: S(
      '{"id": 1, "mpts": true, "stream-name": "a"}, {"id": 2, "stream-name": "b", "input": [{"type": "transcoder", "decoder-id": 1}]}',
    ),
    rule: 'reference',
    pointer: '/stream/1/input/0/decoder-id',
    message:
      'decoder-id 1 refers to a multiplex (mpts) stream; a transcoder decodes a single-programme stream (take one programme out with a demuxer stream first)',
    at: '1}]',
  },
  {
    name: 'transcoder refers to its own stream',
    text: S('{"id": 3, "stream-name": "a", "input": [{"type": "transcoder", "decoder-id": 3}]}'),
    rule: 'reference',
    pointer: '/stream/0/input/0/decoder-id',
    message: 'decoder-id 3 refers to the stream itself',
    at: '3}]',
  },
  {
    name: 'loop of transcoders between streams',
    text: S(
      '{"id": 1, "stream-name": "a", "input": [{"type": "transcoder", "decoder-id": 2}]}, {"id": 2, "stream-name": "b", "input": [{"type": "transcoder", "decoder-id": 1}]}',
    ),
    rule: 'cycle',
    pointer: '/stream/1/input/0/decoder-id',
    message: 'decoder-id 1 closes a loop of transcoder inputs between streams',
    at: '1}]}]',
  },
  {
    name: 'transcoder enc-opt naming an output file',
    text: S(
      '{"id": 1, "stream-name": "a"}, {"id": 2, "stream-name": "b", "input": [{"type": "transcoder", "decoder-id": 1, "enc-opt": "preset=fast:stats=/tmp/x"}]}',
    ),
    rule: 'enc-opt',
    pointer: '/stream/1/input/0/enc-opt',
    message:
      'enc-opt: preset is not an allowed H.264 (x264) option (only encoder settings that add no input, output, filter, file or protocol: docs/transcoder.md)',
    at: '"preset=fast',
  },
  {
    name: 'transcoder enc-opt value with a path',
    text: S(
      '{"id": 1, "stream-name": "a"}, {"id": 2, "stream-name": "b", "input": [{"type": "transcoder", "decoder-id": 1, "enc-opt": "aq-mode=1:me=/dev/x"}]}',
    ),
    rule: 'enc-opt',
    pointer: '/stream/1/input/0/enc-opt',
    message:
      'enc-opt: the value of me must be 1 to 64 of letters, digits and . , + - (got "/dev/x")',
    at: '"aq-mode',
  },
  {
    name: 'transcoder enc-opt option injection (MPEG-2)',
    text: S(
      '{"id": 1, "stream-name": "a"}, {"id": 2, "stream-name": "b", "input": [{"type": "transcoder", "decoder-id": 1, "enc-type": 0, "enc-opt": "i=x.ts"}]}',
    ),
    rule: 'enc-opt',
    pointer: '/stream/1/input/0/enc-opt',
    message:
      'enc-opt: i is not an allowed MPEG-2 option (only encoder settings that add no input, output, filter, file or protocol: docs/transcoder.md)',
    at: '"i=x.ts"',
  },
  {
    name: 'demuxer (src 1) refers to a missing adapter',
    text: S('{"stream-name": "a", "input": [{"type": "demuxer", "src": 1, "mpts-id": 4}]}'),
    rule: 'reference',
    pointer: '/stream/0/input/0/mpts-id',
    message: 'mpts-id 4 refers to no tuner adapter (src 1) (no dvb-adapter record has id 4)',
    at: '4}',
  },
  {
    name: 'dvb input refers to a missing adapter',
    text: S('{"stream-name": "a", "input": [{"type": "dvb", "adapter-id": 3}]}'),
    rule: 'reference',
    pointer: '/stream/0/input/0/adapter-id',
    message: 'adapter-id 3 refers to no tuner adapter (no dvb-adapter record has id 3)',
    at: '3}',
  },
  {
    name: 'stream refers to a missing storage',
    text: S('{"stream-name": "a", "dvr-storage": 2}'),
    rule: 'reference',
    pointer: '/stream/0/dvr-storage',
    message:
      'dvr-storage 2 refers to no archive storage (no dvr-storage-list.storage record has id 2)',
    at: '2}',
  },
  {
    name: 'stream refers to a missing channel set',
    text: S('{"stream-name": "a", "epg-channel-set": [5]}'),
    rule: 'reference',
    pointer: '/stream/0/epg-channel-set/0',
    message:
      'epg-channel-set item 5 refers to no EPG channel set (no epg-server.channel-set record has id 5)',
    at: '5]',
  },
  {
    name: 'stream refers to a missing EPG source',
    text: S('{"stream-name": "a", "epg-source": 9}'),
    rule: 'reference',
    pointer: '/stream/0/epg-source',
    message: 'epg-source 9 refers to no EPG source (no epg.source record has id 9)',
    at: '9}',
  },
  {
    name: 'login refers to a missing channel set',
    text: `{${V}, "epg-server": {"login": [{"id": 1, "login": "l", "password": "p", "channel-set": 6}]}}`,
    rule: 'reference',
    pointer: '/epg-server/login/0/channel-set',
    message:
      'channel-set 6 refers to no EPG channel set (no epg-server.channel-set record has id 6)',
    at: '6}',
  },
  {
    name: 'adaptive group refers to a missing stream',
    text: `{${V}, "stream-adaptive": [{"id": 1, "stream-name": "abr", "streams": [42]}]}`,
    rule: 'reference',
    pointer: '/stream-adaptive/0/streams/0',
    message: 'streams item 42 refers to no stream (no stream has id 42)',
    at: '42',
  },
  {
    name: 'duplicate stream id',
    text: S('{"id": 5, "stream-name": "a"},\n {"id": 5, "stream-name": "b"}'),
    rule: 'duplicate',
    pointer: '/stream/1/id',
    message: 'duplicate stream id 5: already used by /stream/0',
    at: '5, "stream-name": "b"',
  },
  {
    name: 'duplicate stream name',
    text: S('{"id": 1, "stream-name": "news"},\n {"id": 2, "stream-name": "news"}'),
    rule: 'duplicate',
    pointer: '/stream/1/stream-name',
    message: 'duplicate stream-name "news": already used by /stream/0',
    at: '"news"}]',
  },
  {
    name: 'duplicate adapter name',
    text: `{${V}, "dvb-adapter": [{"id": 1, "name": "a", "mode": 1}, {"id": 2, "name": "a", "mode": 1}]}`,
    rule: 'duplicate',
    pointer: '/dvb-adapter/1/name',
    message: 'duplicate tuner adapter name "a": already used by /dvb-adapter/0',
    at: '"a", "mode": 1}]',
  },
  {
    name: 'two adapters on one frontend',
    text: `{${V}, "dvb-adapter": [{"id": 1, "name": "a", "mode": 2, "adapter": 0}, {"id": 2, "name": "b", "mode": 2, "adapter": 0, "device": 0}]}`,
    rule: 'duplicate',
    pointer: '/dvb-adapter/1/adapter',
    message:
      'adapter 0 device 0 is already used by /dvb-adapter/0: one frontend serves one tuner adapter',
    at: '0, "device"',
  },
  {
    name: 'a DVB-T member on a DVB-S adapter',
    text: `{${V}, "dvb-adapter": [{"id": 1, "name": "s", "type": 5, "lnb-polarization": 0, "bandwidth": 8000}]}`,
    rule: 'not-allowed',
    pointer: '/dvb-adapter/0/bandwidth',
    message: 'bandwidth is not allowed here: only when mode 0 and type 3 or 16',
    at: '"bandwidth"',
  },
  {
    name: 'demuxer loop between multiplex streams',
    text: S(
      '{"id": 1, "mpts": true, "stream-name": "a", "input": [{"type": "demuxer", "mpts-id": 2}]}, {"id": 2, "mpts": true, "stream-name": "b", "input": [{"type": "demuxer", "mpts-id": 1}]}',
    ),
    rule: 'cycle',
    pointer: '/stream/1/input/0/mpts-id',
    message: 'mpts-id 1 closes a loop of demuxer inputs between streams',
    at: '1}]}]',
  },
  {
    name: 'muxer programme refers to a missing stream',
    text: S(
      '{"id": 1, "mpts": true, "stream-name": "m", "input": [{"type": "muxer", "programmes": [{"stream-id": 8, "pnr": 1}]}]}',
    ),
    rule: 'reference',
    pointer: '/stream/0/input/0/programmes/0/stream-id',
    message: 'stream-id 8 refers to no stream (no stream has id 8)',
    at: '8, "pnr"',
  },
  {
    name: 'muxer programme refers to a multiplex stream (itself)',
    text: S(
      '{"id": 1, "mpts": true, "stream-name": "m", "input": [{"type": "muxer", "programmes": [{"stream-id": 1, "pnr": 1}]}]}',
    ),
    rule: 'reference',
    pointer: '/stream/0/input/0/programmes/0/stream-id',
    message:
      'stream-id 1 refers to a multiplex (mpts) stream; a muxer programme is a single-programme stream',
    at: '1, "pnr"',
  },
  {
    name: 'muxer programme without pnr',
    text: S(
      '{"id": 1, "stream-name": "a"}, {"id": 2, "mpts": true, "stream-name": "m", "input": [{"type": "muxer", "programmes": [{"stream-id": 1}]}]}',
    ),
    rule: 'required',
    pointer: '/stream/1/input/0/programmes/0/pnr',
    message: 'pnr is required',
    at: '{"stream-id": 1}',
  },
  {
    name: 'muxer programmes repeat a pnr',
    text: S(
      '{"id": 1, "stream-name": "a"}, {"id": 2, "stream-name": "b"}, {"id": 3, "mpts": true, "stream-name": "m", "input": [{"type": "muxer", "programmes": [{"stream-id": 1, "pnr": 5}, {"stream-id": 2, "pnr": 5}]}]}',
    ),
    rule: 'duplicate',
    pointer: '/stream/2/input/0/programmes/1/pnr',
    message: 'pnr 5 is already given to item 0',
    at: '5}]}]}',
  },
  {
    name: 'muxer input on a stream that is not a multiplex',
    text: S(
      '{"id": 1, "stream-name": "a"}, {"id": 2, "stream-name": "m", "input": [{"type": "muxer", "programmes": [{"stream-id": 1, "pnr": 1}]}]}',
    ),
    rule: 'mpts',
    pointer: '/stream/1/input/0/type',
    message: 'a muxer input builds a multiplex: its stream needs "mpts": true',
    at: '"muxer", "programmes"',
  },
  {
    name: 'loop of a muxer and a demuxer',
    text: S(
      '{"id": 1, "mpts": true, "stream-name": "m", "input": [{"type": "muxer", "programmes": [{"stream-id": 2, "pnr": 1}]}]}, {"id": 2, "stream-name": "d", "input": [{"type": "demuxer", "mpts-id": 1, "pnr": 1}]}',
    ),
    rule: 'cycle',
    pointer: '/stream/1/input/0/mpts-id',
    message: 'mpts-id 1 closes a loop of demuxer and muxer inputs between streams',
    at: '1, "pnr": 1}]}]',
  },
];

function position(text: string, at: Case['at']): { line: number; column: number } {
  if (typeof at !== 'string') return at;
  const off = text.indexOf(at);
  if (off < 0) throw new Error(`marker ${at} not in text`);
  const before = text.slice(0, off).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}

t.ok(CASES.length >= 25, `${CASES.length} invalid configs`);

for (const c of CASES) {
  t.test(c.name, async (t) => {
    let issues: ConfigIssue[] = [];
    t.throws(() => {
      try {
        loadConfigText(c.text, { source: 'case.json' });
      } catch (e) {
        if (e instanceof ConfigError) issues = e.issues;
        throw e;
      }
    }, ConfigError);
    const errors = issues.filter((i) => i.severity === 'error');
    t.equal(errors.length, 1, `exactly one error: ${JSON.stringify(errors)}`);
    const e = errors[0]!;
    t.equal(e.rule, c.rule, 'rule');
    t.equal(e.pointer, c.pointer, 'pointer');
    if (typeof c.message === 'string') t.equal(e.message, c.message, 'message');
    else t.match(e.message, c.message, 'message');
    const pos = position(c.text, c.at);
    t.same({ line: e.line, column: e.column }, pos, 'line:column');
  });
}

t.test('every error is reported at once, with file:line:column in the message', async (t) => {
  const text = S(
    '{"stream-name": "a", "pause": 1, "order": "x", "input": [{"type": "udp", "port": 0}]}',
  );
  const err = t.throws(() => loadConfigText(text, { source: 'many.json' })) as ConfigError;
  t.equal(err.issues.filter((i) => i.severity === 'error').length, 3);
  t.match(err.message, /^many\.json: 3 errors\n/);
  t.match(
    err.message,
    /many\.json:1:\d+: error \[minimum\] \/stream\/0\/input\/0\/port: port must be at least 1, got 0/,
  );
});
