// The stream id an srt caller sends for srt-client-login / -password, and aes-type → key length.
import t from 'tap';
import {
  callerStreamId,
  keyLengthOf,
  peerAuthStreamId,
} from '../../src/protocols/srt/stream-id.ts';

t.test('caller stream id', async (t) => {
  t.equal(callerStreamId('', 'secret'), '', 'no login, no stream id');
  t.equal(callerStreamId('cam1', ''), '#!::u=cam1');
  t.equal(callerStreamId('cam1', 'pw'), '#!::u=cam1,s=pw');
  t.equal(callerStreamId('#!::r=live/a,m=publish', 'pw'), '#!::r=live/a,m=publish', 'verbatim');
});

t.test('aes-type to key length', async (t) => {
  t.equal(keyLengthOf(0), 16);
  t.equal(keyLengthOf(1), 24);
  t.equal(keyLengthOf(2), 32);
});

t.test(
  'peer-auth: the node as user, the proof as s; characters that would split it replaced',
  async (t) => {
    t.equal(peerAuthStreamId('edge-1', 'PROOF'), '#!::u=edge-1,s=PROOF');
    t.equal(peerAuthStreamId('a,b=c', 'P'), '#!::u=a_b_c,s=P');
  },
);
