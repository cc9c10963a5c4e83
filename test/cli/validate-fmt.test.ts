// `sluice validate` and `sluice fmt` as a user runs them: exit codes, every error with its
// pointer and line:column, warnings, minimal-form rewrite and --check; plus help and usage.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { REPO_ROOT, runCli, startServer, tempDir, waitFor } from '../helpers/server.ts';

const BAD = `{
  "user": [
    { "login": "a", "password": "b", "role": "boss" },
    { "login": "c", "pasword": "d" }
  ],
  "http-server": { "port": 70000 },
  "nonsense": 1
}
`;

const WITH_DEFAULTS = `{
  "http-server": { "port": 43971, "realm": "sluice" },
  "user": [ { "login": "a", "password": "b", "role": "viewer" } ]
}
`;

t.test('validate: every error with pointer and line:column, warnings too, exit 1', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'bad.json');
  await writeFile(file, BAD);
  const r = await runCli(['validate', file]);
  t.equal(r.code, 1);
  const lines = r.stderr.trim().split('\n');
  t.match(lines, [
    `${file}:3:46: error [enum] /user/0/role: `,
    `${file}:4:5: error [required] /user/1/password: `,
    `${file}:6:28: error [maximum] /http-server/port: `,
    `${file}:7:3: error [unknown-member] /nonsense: `,
    /bad\.json:4:\d+: warning \[unknown-member\] \/user\/1\/pasword: .*did you mean password/,
    /invalid, 4 errors/,
  ]);
});

t.test('validate: a valid file exits 0; warnings are printed but do not fail', async (t) => {
  const ok = await runCli(['validate', path.join(REPO_ROOT, 'examples/config.json')]);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, /valid/);

  const dir = await tempDir(t);
  const file = path.join(dir, 'warn.json');
  await writeFile(file, '{ "user": [ { "login": "a", "password": "b", "rol": "admin" } ] }\n');
  const w = await runCli(['validate', file]);
  t.equal(w.code, 0);
  t.match(w.stderr, /warning \[unknown-member\] \/user\/0\/rol: .*did you mean role/);
  t.match(w.stdout, /valid, 1 warning/);
});

t.test('validate: a syntax error gives its line and column', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'syntax.json');
  await writeFile(file, '{\n  "user": [\n    { "login": "a", }\n  ]\n}\n');
  const r = await runCli(['validate', file]);
  t.equal(r.code, 1);
  t.match(r.stderr, new RegExp(`${file.replace(/[.]/g, '\\.')}:3:\\d+: error \\[syntax\\]`));
});

t.test('fmt: --check reports, fmt rewrites in minimal form, then --check passes', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'c.json');
  await writeFile(file, WITH_DEFAULTS);
  const check = await runCli(['fmt', '--check', file]);
  t.equal(check.code, 1);
  t.match(check.stdout, /not in minimal form/);
  t.equal(await readFile(file, 'utf8'), WITH_DEFAULTS, '--check writes nothing');

  const fmt = await runCli(['fmt', file]);
  t.equal(fmt.code, 0, fmt.stderr);
  const text = await readFile(file, 'utf8');
  t.same(JSON.parse(text), { user: [{ login: 'a', password: 'b' }] }, 'defaults are gone');

  const again = await runCli(['fmt', '--check', file]);
  t.equal(again.code, 0);
  t.equal(await readFile(file, 'utf8'), text);
});

t.test('fmt: an invalid file is left untouched, exit 1', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'bad.json');
  await writeFile(file, BAD);
  const r = await runCli(['fmt', file]);
  t.equal(r.code, 1);
  t.match(r.stderr, /error \[enum\] \/user\/0\/role/);
  t.equal(await readFile(file, 'utf8'), BAD);
});

t.test(
  'one mistake, one error: "ott-hls": true is reported once, as the enum it breaks',
  async (t) => {
    const dir = await tempDir(t);
    const file = path.join(dir, 'hls.json');
    await writeFile(file, '{\n  "stream": [ { "stream-name": "a", "ott-hls": true } ]\n}\n');
    const r = await runCli(['validate', file]);
    t.equal(r.code, 1);
    t.same(r.stderr.trim().split('\n'), [
      `${file}:2:48: error [enum] /stream/0/ott-hls: ott-hls must be one of 0, 1, 2, 3, got true`,
      `${file}: invalid, 1 error`,
    ]);
  },
);

t.test('the log, /data/status and validate print a refused config in one format', async (t) => {
  const srv = await startServer(t, { config: {} });
  const file = srv.configPath!;
  const running = JSON.parse(await readFile(file, 'utf8'));
  const broken = `${JSON.stringify(
    { ...running, stream: [{ 'stream-name': 'a', 'ott-hls': true, pause: 'no' }] },
    null,
    2,
  )}\n`;
  await writeFile(file, broken);
  const status = await waitFor('the refusal in /data/status', async () => {
    const res = await fetch(`${srv.url}/data/status`);
    const body = (await res.json()) as { source: { lastError: { message: string } | null } };
    return body.source.lastError ?? undefined;
  });
  const v = await runCli(['validate', file]);
  t.equal(v.code, 1);
  const validateLines = v.stderr.trim().split('\n').slice(0, -1);
  t.equal(validateLines.length, 2, 'one error per wrong member');
  const statusLines = status.message.split('\n');
  t.equal(statusLines[0], `${file}: 2 errors`);
  t.same(statusLines.slice(1), validateLines, '/data/status says what validate says');
  const logged = await waitFor('the refusal in the log', () =>
    srv.output().includes(JSON.stringify(validateLines[0]).slice(1, -1)) ? true : undefined,
  );
  t.ok(logged, 'the log says it the same way');
});

t.test('help and usage', async (t) => {
  const help = await runCli(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /sluice serve/);
  t.match(help.stdout, /sluice reconcile --plan/);
  const sub = await runCli(['reconcile', '--help']);
  t.equal(sub.code, 0);
  t.match(sub.stdout, /Exit codes: --plan: 0 no changes, 2 changes, 1/);
  const bad = await runCli(['frobnicate']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /unknown command "frobnicate"/);
  const badOpt = await runCli(['validate', '--nope', 'x.json']);
  t.equal(badOpt.code, 1);
  t.match(badOpt.stderr, /Unknown option '--nope'/);
  const missing = await runCli(['validate', '/nonexistent/c.json']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /ENOENT|no such file/);
});
