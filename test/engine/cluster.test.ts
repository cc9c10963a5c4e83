// The cluster proof (peer-auth): the same for every node of a domain, different between
// domains, safe inside an SRT Access Control stream id, and not the domain itself.
import t from 'tap';
import { peerProof } from '../../src/engine/cluster.ts';

t.test(
  'peerProof: one per domain, 32 base64url characters, the domain not recoverable',
  async (t) => {
    const a = peerProof('cluster-secret-7f3a');
    t.equal(a, peerProof('cluster-secret-7f3a'), 'every node of the domain derives the same');
    t.not(a, peerProof('cluster-secret-7f3b'), 'another domain, another proof');
    t.match(a, /^[A-Za-z0-9_-]{32}$/, 'no "," or "=" to break the stream id');
    t.notMatch(a, /cluster|secret/);
  },
);
