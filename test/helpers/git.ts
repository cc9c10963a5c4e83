// Real git repositories for tests: a bare "remote" in a temp dir and a working clone that
// pushes commits to it, driven through the git program with argv (no shell).
import { execFile } from 'node:child_process';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { type Teardown, tempDir } from './server.ts';

const run = promisify(execFile);

/** git's standard output as it is (file contents keep their final newline). */
export async function gitRaw(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', args, {
    cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
  });
  return stdout;
}

/** git's standard output trimmed (commit ids, one-line answers). */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await gitRaw(cwd, ...args)).trim();
}

export interface TestRepo {
  /** URL of the bare repository (a local path). */
  url: string;
  bare: string;
  work: string;
  /** Write `config.json` (or `file`) in the working clone, commit and push; returns the commit. */
  push(text: string, message?: string, file?: string): Promise<string>;
  /** The remote branch's head commit. */
  remoteHead(branch?: string): Promise<string>;
  /** The file at the remote branch's head. */
  remoteFile(file?: string, branch?: string): Promise<string>;
  /** Make the remote refuse every push (a pre-receive hook exiting 1), or accept again. */
  rejectPushes(on: boolean): Promise<void>;
}

export async function makeRepo(t: Teardown, branch = 'main'): Promise<TestRepo> {
  const dir = await tempDir(t, 'sluice-git-');
  const bare = path.join(dir, 'remote.git');
  const work = path.join(dir, 'work');
  await mkdir(bare);
  await git(bare, 'init', '-q', '--bare', `--initial-branch=${branch}`);
  await git(dir, 'clone', '-q', bare, work);
  await git(work, 'config', 'user.name', 'test');
  await git(work, 'config', 'user.email', 'test@localhost');
  await git(work, 'config', 'commit.gpgsign', 'false');
  await git(work, 'checkout', '-q', '-B', branch);
  const hook = path.join(bare, 'hooks', 'pre-receive');
  return {
    url: bare,
    bare,
    work,
    async push(text, message = 'test commit', file = 'config.json') {
      // Pick up commits the server pushed, so ours is a fast-forward.
      await git(work, 'pull', '-q', '--ff-only', 'origin', branch).catch(() => undefined);
      await mkdir(path.dirname(path.join(work, file)), { recursive: true });
      await writeFile(path.join(work, file), text);
      await git(work, 'add', '--', file);
      await git(work, 'commit', '-q', '--allow-empty', '-m', message);
      await git(work, 'push', '-q', 'origin', `HEAD:refs/heads/${branch}`);
      return git(work, 'rev-parse', 'HEAD');
    },
    remoteHead: (b = branch) => git(bare, 'rev-parse', `refs/heads/${b}`),
    remoteFile: (file = 'config.json', b = branch) => gitRaw(bare, 'show', `${b}:${file}`),
    async rejectPushes(on) {
      if (on) {
        await writeFile(hook, '#!/bin/sh\necho "pushes are closed" >&2\nexit 1\n');
        await chmod(hook, 0o755);
      } else {
        await rm(hook, { force: true });
      }
    },
  };
}
