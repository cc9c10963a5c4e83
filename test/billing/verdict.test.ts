// Judging billing replies in each response-format, with spec 1's defaults (ok-path `allowed`
// or `code`, ok-value `true` or `200`, reason `reason`) and custom paths.
import t from 'tap';
import { judgeReply, type ReplyRules } from '../../src/billing/verdict.ts';

const rules = (format: ReplyRules['format'], more: Partial<ReplyRules> = {}): ReplyRules => ({
  format,
  okPath: '',
  okValue: '',
  reasonPath: '',
  ...more,
});

t.test('status', async (t) => {
  t.same(judgeReply(rules('status'), 200, ''), { verdict: true, allowed: true });
  t.same(judgeReply(rules('status'), 403, 'no money\nmore'), {
    verdict: true,
    allowed: false,
    reason: 'no money',
  });
  t.same(
    judgeReply(rules('status'), 204, ''),
    { verdict: true, allowed: false },
    'only 200 by default',
  );
  t.same(judgeReply(rules('status', { okValue: '204' }), 204, ''), {
    verdict: true,
    allowed: true,
  });
  t.same(
    judgeReply(rules('status'), 403, '<html>x</html>'),
    { verdict: true, allowed: false },
    'no HTML reason',
  );
  t.same(judgeReply(rules('status'), 503, ''), { verdict: false, why: 'HTTP 503' });
  t.same(judgeReply(rules('status'), 302, ''), { verdict: false, why: 'HTTP 302' });
});

t.test('json', async (t) => {
  t.same(judgeReply(rules('json'), 200, '{"allowed":true}'), { verdict: true, allowed: true });
  t.same(judgeReply(rules('json'), 200, '{"allowed":"true"}'), { verdict: true, allowed: true });
  t.same(
    judgeReply(rules('json'), 200, '{"code":200}'),
    { verdict: true, allowed: true },
    'code when no allowed',
  );
  t.same(judgeReply(rules('json'), 403, '{"allowed":false,"reason":"expired"}'), {
    verdict: true,
    allowed: false,
    reason: 'expired',
  });
  const custom = rules('json', {
    okPath: 'result.status',
    okValue: 'active',
    reasonPath: 'result.why',
  });
  t.same(judgeReply(custom, 200, '{"result":{"status":"active"}}'), {
    verdict: true,
    allowed: true,
  });
  t.same(judgeReply(custom, 200, '{"result":{"status":"blocked","why":"debt"}}'), {
    verdict: true,
    allowed: false,
    reason: 'debt',
  });
  t.match(judgeReply(rules('json'), 200, '{"other":1}'), {
    verdict: true,
    allowed: false,
    reason: /no allowed or code/,
  });
  t.match(judgeReply(rules('json'), 200, 'garbage{'), { verdict: false, why: /not JSON/ });
  t.same(
    judgeReply(rules('json'), 200, '{"allowed":{"x":1}}'),
    { verdict: true, allowed: false },
    'an object is not ok',
  );
});

t.test('xml', async (t) => {
  t.same(judgeReply(rules('xml'), 200, '<?xml version="1.0"?><auth code="200"/>'), {
    verdict: true,
    allowed: true,
  });
  t.same(judgeReply(rules('xml'), 200, '<auth allowed="false" reason="no subscription"></auth>'), {
    verdict: true,
    allowed: false,
    reason: 'no subscription',
  });
  const custom = rules('xml', { okPath: 'state', okValue: 'ok' });
  t.same(judgeReply(custom, 200, '<r state="ok"><reason>n/a</reason></r>'), {
    verdict: true,
    allowed: true,
    reason: 'n/a',
  });
  t.match(judgeReply(rules('xml'), 200, 'just text'), { verdict: false });
  // Entities are never expanded: a billion-laughs body is read as written.
  const bomb =
    '<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><r allowed="&b;"/>';
  t.same(judgeReply(rules('xml'), 200, bomb), { verdict: true, allowed: false });
});

t.test('a long reason is cut', async (t) => {
  const j = judgeReply(
    rules('json'),
    200,
    JSON.stringify({ allowed: false, reason: 'x'.repeat(1000) }),
  );
  t.ok(j.verdict && j.reason && j.reason.length <= 201);
});
