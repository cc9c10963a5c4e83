// Pure pieces of the config service and CLI: If-Match matching, the serial queue, repository
// path checks, issue lines, and rebuilding a plan from the server's JSON.
import path from 'node:path';
import t from 'tap';
import { planFromJson } from '../../src/cli/plan-file.ts';
import { checkRepoPath, normaliseGitUrl } from '../../src/config/git.ts';
import { formatIssue } from '../../src/config/issues.ts';
import { etagOf, ifMatchAccepts, SerialQueue } from '../../src/config/service.ts';
import { renderPlanText } from '../../src/reconciler/render.ts';

t.test('If-Match: exact, lists and * match; a weak tag and anything else do not', async (t) => {
  const etag = etagOf('{}\n');
  t.match(etag, /^"[0-9a-f]{64}"$/);
  const cases: Array<[string, boolean]> = [
    [etag, true],
    [`W/${etag}`, false], // If-Match compares strongly (RFC 9110 §13.1.1)
    [`"other", ${etag}`, true],
    ['*', true],
    ['"other"', false],
    [etag.slice(1, -1), false],
    ['', false],
  ];
  for (const [header, want] of cases) t.equal(ifMatchAccepts(header, etag), want, header);
});

t.test('the serial queue runs one task at a time, in order, past failures', async (t) => {
  const q = new SerialQueue();
  const log: string[] = [];
  let running = 0;
  const task = (name: string, fail = false) =>
    q.run(async () => {
      running++;
      t.equal(running, 1, `${name} runs alone`);
      await new Promise((r) => setImmediate(r));
      log.push(name);
      running--;
      if (fail) throw new Error(name);
      return name;
    });
  const results = await Promise.allSettled([task('a'), task('b', true), task('c')]);
  t.same(log, ['a', 'b', 'c']);
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  await q.idle();
});

t.test('--path must stay inside the repository', async (t) => {
  t.equal(checkRepoPath('config.json'), 'config.json');
  t.equal(checkRepoPath('./env/prod/config.json'), 'env/prod/config.json');
  t.throws(() => checkRepoPath('../outside.json'));
  t.throws(() => checkRepoPath('env/../../x.json'));
  t.throws(() => checkRepoPath('/etc/passwd'));
});

t.test('issue lines: file:line:column, severity, rule, pointer, message', async (t) => {
  t.equal(
    formatIssue(
      {
        severity: 'error',
        pointer: '/stream/0/port',
        line: 12,
        column: 5,
        rule: 'maximum',
        message: 'port must be at most 65535',
      },
      'c.json',
    ),
    'c.json:12:5: error [maximum] /stream/0/port: port must be at most 65535',
  );
  t.equal(
    formatIssue({ severity: 'warning', pointer: '', rule: 'x', message: 'm' }, 'c.json'),
    'c.json: warning [x] /: m',
  );
});

t.test("a plan rebuilt from the server's JSON renders like the original", async (t) => {
  const json = {
    format: 'sluice-plan/1',
    changed: true,
    valid: true,
    summary: { add: 1, change: 0, replace: 0, destroy: 0, unchanged: 3 },
    changes: [
      {
        kind: 'user',
        key: 'bob',
        name: 'bob',
        action: 'create',
        fields: [
          { path: 'login', before: null, after: 'bob', apply: 'replace' },
          { path: 'password', before: null, after: '(sensitive)', apply: 'hot', sensitive: true },
        ],
        forcesReplace: [],
        unchanged: 0,
      },
    ],
    errors: [],
    warnings: [],
  };
  const plan = planFromJson(json);
  t.same(plan.summary, { add: 1, change: 0, replace: 0, destroy: 0 });
  const text = renderPlanText(plan);
  t.match(text, /\+ user "bob"/);
  t.match(text, /Plan: 1 to add, 0 to change, 0 to replace, 0 to destroy\./);
  t.throws(() => planFromJson({}), /not a plan/);
});

t.test('git URLs: local paths become absolute, remote URLs stay', async (t) => {
  t.equal(normaliseGitUrl('https://example.com/cfg.git'), 'https://example.com/cfg.git');
  t.equal(normaliseGitUrl('ssh://git@example.com/cfg.git'), 'ssh://git@example.com/cfg.git');
  t.equal(normaliseGitUrl('git@example.com:ops/cfg.git'), 'git@example.com:ops/cfg.git');
  t.equal(normaliseGitUrl('file:///srv/cfg.git'), 'file:///srv/cfg.git');
  t.equal(normaliseGitUrl('/srv/cfg.git'), '/srv/cfg.git');
  t.equal(normaliseGitUrl('../cfg.git'), path.resolve('../cfg.git'));
  t.equal(normaliseGitUrl('./a:b/cfg.git'), path.resolve('./a:b/cfg.git'));
});
