// The git source: a clone of URL + branch in the data dir, polled with `git fetch`. A new
// remote head is checked out and its config file applied (or refused and reported, keeping the
// last good one). API edits become commits pushed back to the same remote; a rejected push
// undoes the commit and answers 409.
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { type SimpleGit, simpleGit } from 'simple-git';
import { HttpError } from '../errors.ts';
import type { Clock, Timer } from '../util/clock.ts';
import type { ConfigPersister, ConfigServiceImpl, RefreshOutcome } from './service.ts';
import { emptyConfigText } from './service.ts';
import { writeFileAtomic } from './store.ts';
import { readConfigFile } from './watch.ts';

export const DEFAULT_GIT_BRANCH = 'main';
export const DEFAULT_GIT_PATH = 'config.json';
export const DEFAULT_GIT_POLL_SEC = 30;
/** Upper bound for one git command (fetch over a slow link included). */
const GIT_COMMAND_TIMEOUT_MS = 60_000;
/** Folder of the clone inside the data dir. */
export const GIT_CLONE_DIR = 'git-clone';

export interface GitSourceOptions {
  url: string;
  branch?: string;
  /** Config file path inside the repository. */
  path?: string;
  pollSec?: number;
  dataDir: string;
  clock: Clock;
  log: Logger;
  /** Called after each poll (tests and status wait on it). */
  onPoll?: (outcome: RefreshOutcome) => void;
}

/** Environment variables git may see: enough to find itself, HOME config and an ssh agent. */
const GIT_ENV_KEEP = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'SSH_AUTH_SOCK'];

function gitEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of GIT_ENV_KEEP) {
    const v = process.env[k];
    if (v !== undefined) env[k] = v;
  }
  // Never wait for a password on a terminal nobody watches. Everything else (EDITOR, PAGER,
  // GIT_SSH_COMMAND …) is left out: simple-git refuses such variables, and the server needs none.
  env['GIT_TERMINAL_PROMPT'] = '0';
  return env;
}

function git(dir: string): SimpleGit {
  return simpleGit({ baseDir: dir, timeout: { block: GIT_COMMAND_TIMEOUT_MS } }).env(gitEnv());
}

/** Refuse a config path that leaves the repository. */
export function checkRepoPath(p: string): string {
  const norm = path.posix.normalize(p.replace(/\\/g, '/'));
  if (norm.startsWith('../') || norm === '..' || path.posix.isAbsolute(norm)) {
    throw new Error(`--path must stay inside the repository: ${p}`);
  }
  return norm;
}

/**
 * A local repository path made absolute (the clone lives elsewhere, so `../repo.git` would
 * point somewhere else from there); URLs and scp-like `host:path` are returned as given.
 */
export function normaliseGitUrl(url: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return url;
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  const scpLike = colon > 0 && (slash < 0 || colon < slash);
  return scpLike ? url : path.resolve(url);
}

export class GitSource implements ConfigPersister {
  readonly url: string;
  readonly branch: string;
  readonly repoPath: string;
  readonly pollMs: number;
  readonly dir: string;
  private service: ConfigServiceImpl | undefined;
  private head: string | null = null;
  private appliedCommit: string | null = null;
  private fetchError: string | null = null;
  /** Set while the branch is missing from a remote that has other branches (likely a typo). */
  private missingBranch: string | null = null;
  private timer: Timer | undefined;
  private polling: Promise<RefreshOutcome> | undefined;
  private closed = false;

  constructor(private readonly opts: GitSourceOptions) {
    this.url = normaliseGitUrl(opts.url);
    this.branch = opts.branch ?? DEFAULT_GIT_BRANCH;
    this.repoPath = checkRepoPath(opts.path ?? DEFAULT_GIT_PATH);
    this.pollMs = Math.max(1, opts.pollSec ?? DEFAULT_GIT_POLL_SEC) * 1000;
    this.dir = path.join(opts.dataDir, GIT_CLONE_DIR);
  }

  /** Members for `/data/status`. */
  info(): Record<string, unknown> {
    const refused = this.service?.invalid();
    return {
      type: 'git',
      url: this.url,
      branch: this.branch,
      path: this.repoPath,
      head: this.head,
      appliedCommit: this.appliedCommit,
      lastError: refused
        ? { origin: refused.origin, message: refused.message }
        : this.fetchError
          ? { origin: 'fetch', message: this.fetchError }
          : null,
      ...(this.missingBranch ? { warning: this.missingBranch } : {}),
    };
  }

  attach(service: ConfigServiceImpl): void {
    this.service = service;
  }

  /** Make the clone (or reuse the one from the last run when it points at the same URL). */
  async init(): Promise<void> {
    if (await this.reusableClone()) return;
    await rm(this.dir, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true });
    const g = git(this.dir);
    await g.init();
    await g.addRemote('origin', this.url);
    await g.addConfig('user.name', 'sluice');
    await g.addConfig('user.email', 'sluice@localhost');
    await g.addConfig('commit.gpgsign', 'false');
    // Until the branch exists remotely, the first edit creates it.
    await g.raw(['symbolic-ref', 'HEAD', `refs/heads/${this.branch}`]);
  }

  private async reusableClone(): Promise<boolean> {
    try {
      await stat(path.join(this.dir, '.git'));
      const remotes = await git(this.dir).getRemotes(true);
      return remotes.some((r) => r.name === 'origin' && r.refs.fetch === this.url);
    } catch {
      return false;
    }
  }

  /** Start polling every `pollSec`; the first poll runs at once. */
  async start(): Promise<RefreshOutcome> {
    const first = await this.poll();
    this.timer = this.opts.clock.setInterval(() => void this.poll(), this.pollMs);
    return first;
  }

  /** One poll: fetch, and when the remote head moved, check it out and apply its config. */
  poll(): Promise<RefreshOutcome> {
    // Overlapping polls (a slow fetch) would only queue duplicate work.
    if (this.polling) return this.polling;
    this.polling = this.pollNow().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  private async pollNow(): Promise<RefreshOutcome> {
    const service = this.requireService();
    let outcome: RefreshOutcome = 'unchanged';
    // The commit this poll read, if any: only a commit actually read and not refused becomes
    // the applied one (a later poll that finds the refused head unchanged must not).
    let read: string | null = null;
    try {
      outcome = await service.refresh(async () => {
        if (this.closed) return null;
        const remote = await this.fetchHead();
        if (remote === this.head && this.appliedCommit !== null) return null;
        if (remote === this.head && remote === null) {
          // Empty remote on first poll: start from an empty document.
          return { text: emptyConfigText(), origin: 'git:(empty)' };
        }
        if (remote === null) return null;
        await git(this.dir).raw(['checkout', '-f', '-B', this.branch, remote]);
        this.head = remote;
        read = remote;
        const text = await readConfigFile(path.join(this.dir, this.repoPath));
        return {
          text: text ?? emptyConfigText(),
          origin: `git:${remote}`,
          onAdopt: () => {
            this.appliedCommit = remote;
          },
        };
      });
      // A new commit that leaves the config file as it was is applied too (nothing to adopt).
      if (outcome === 'unchanged' && read !== null) this.appliedCommit = read;
      if (outcome === 'invalid') {
        this.opts.log.warn({ head: this.head }, 'git commit refused; keeping the last good one');
      }
    } catch (err) {
      this.fetchError = (err as Error).message;
      this.opts.log.error({ err, url: this.url }, 'git poll failed');
    }
    this.opts.onPoll?.(outcome);
    return outcome;
  }

  /** `git fetch`, then the remote branch's commit (null when the branch does not exist). */
  private async fetchHead(): Promise<string | null> {
    const g = git(this.dir);
    await g.raw(['fetch', '--prune', 'origin', '+refs/heads/*:refs/remotes/origin/*']);
    this.fetchError = null;
    let sha = '';
    try {
      sha = (
        await g.raw(['rev-parse', '--verify', '-q', `refs/remotes/origin/${this.branch}`])
      ).trim();
    } catch {
      sha = '';
    }
    await this.noteMissingBranch(sha === '');
    return sha || null;
  }

  /** An empty remote is normal (the first edit creates the branch); a remote that has other
   *  branches but not this one is more likely a typo in --branch, so say so, once. */
  private async noteMissingBranch(missing: boolean): Promise<void> {
    let others: string[] = [];
    if (missing) {
      const refs = await git(this.dir).raw([
        'for-each-ref',
        '--format=%(refname:strip=3)',
        'refs/remotes/origin/',
      ]);
      others = refs.split('\n').filter((b) => b !== '' && b !== 'HEAD');
    }
    const note =
      others.length > 0
        ? `branch ${this.branch} does not exist at ${this.url} (it has ${others.join(', ')}); ` +
          'running an empty config until it does (the first API edit creates it)'
        : null;
    if (note && note !== this.missingBranch) this.opts.log.warn({ url: this.url }, note);
    this.missingBranch = note;
  }

  /** Commit `text` as the config file and push it; on a rejected push undo the commit. */
  async persist(text: string, message: string): Promise<{ commit?: string }> {
    const g = git(this.dir);
    const file = path.join(this.dir, this.repoPath);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFileAtomic(file, text);
    await g.add(['--', this.repoPath]);
    await g.commit(message, ['--', this.repoPath]);
    const commit = (await g.revparse(['HEAD'])).trim();
    try {
      await g.push('origin', `HEAD:refs/heads/${this.branch}`);
    } catch (err) {
      await this.undo();
      throw new HttpError(
        'CONFLICT',
        `git push to ${this.url} was rejected; the edit is undone: ${firstLine((err as Error).message)}`,
      );
    }
    this.head = commit;
    this.appliedCommit = commit;
    return { commit };
  }

  /** Put the clone back on the last remote head we know (or an unborn branch). */
  private async undo(): Promise<void> {
    const g = git(this.dir);
    if (this.head) {
      await g.raw(['reset', '--hard', this.head]);
    } else {
      await g.raw(['update-ref', '-d', `refs/heads/${this.branch}`]);
      await g.raw(['rm', '-q', '--cached', '--ignore-unmatch', '--', this.repoPath]);
      await rm(path.join(this.dir, this.repoPath), { force: true });
    }
  }

  private requireService(): ConfigServiceImpl {
    if (!this.service) throw new Error('GitSource used before attach()');
    return this.service;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    await this.polling?.catch(() => undefined);
  }
}

function firstLine(s: string): string {
  return s.split('\n').find((l) => l.trim() !== '') ?? s;
}

/** One-shot read of the config at the head of URL + branch (for `reconcile --plan --git`). */
export async function readGitConfigOnce(
  url: string,
  branch: string,
  repoPath: string,
): Promise<{ text: string; commit: string }> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sluice-git-'));
  try {
    await git(tmp).clone(normaliseGitUrl(url), tmp, [
      '--depth',
      '1',
      '--branch',
      branch,
      '--single-branch',
    ]);
    const commit = (await git(tmp).revparse(['HEAD'])).trim();
    const text = await readConfigFile(path.join(tmp, checkRepoPath(repoPath)));
    return { text: text ?? emptyConfigText(), commit };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
