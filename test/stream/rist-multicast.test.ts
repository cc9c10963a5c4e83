// A rist input on a multicast group (`rist-addr-address`, spec 1: "required for multicast")
// fed by ristsender, the reference sender, main profile. Run in a network namespace of its own
// (helpers/netns.ts) where loopback carries multicast; the scenario is
// helpers/rist-multicast-child.ts.
import t from 'tap';
import { inMulticastNetns } from '../helpers/netns.ts';
import { REPO_ROOT } from '../helpers/server.ts';

type Status = Record<string, unknown>;

t.test('multicast group from ristsender: received, whole', async (t) => {
  const r = await inMulticastNetns<Status>(
    `${REPO_ROOT}/test/helpers/rist-multicast-child.ts`,
    ['239.255.0.5'],
    60_000,
  );
  t.equal(r['error'], undefined, String(r['error'] ?? 'no error'));
  t.equal(r['state'], 'running', 'the stream runs on the multicast input');
  const tr = r['transport'] as Status;
  t.equal(tr['profile'], 'main');
  t.match(tr['listening'], /^239\.255\.0\.5:\d+$/, 'listening on the group');
  t.ok(Number(tr['bytes']) > 200_000, `received ${tr['bytes']} bytes`);
  t.equal(r['ccErrors'], 0, '0 CC errors');
});
