// The docs' example blocks (```json and ```sh in docs/*.md and README.md) with the marker that
// says what each is, and the config a block stands for; the conventions are in docs/examples.md.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../helpers/server.ts';

export const CONFIG_KINDS = ['config', 'stream', 'input', 'output'] as const;
export type ConfigKind = (typeof CONFIG_KINDS)[number];
export type Kind = ConfigKind | 'not-config' | 'run' | 'not-run';

export interface Example {
  /** `docs/transports.md:512`, the line of the opening fence. */
  where: string;
  file: string;
  lang: 'json' | 'sh';
  /** Undefined when the block has no marker (a test failure of its own). */
  kind?: Kind;
  /** What follows the kind: the reason of a not-config / not-run, a run's `NAME=value`s. */
  note: string;
  body: string;
}

const MARKER = /^\s*<!-- example: ([a-z-]+)(?:\s+(?:— )?(.*?))? -->\s*$/;
const FENCE = /^(\s*)```(json|sh)\s*$/;

/** The Markdown files whose examples are checked. */
export function docFiles(): string[] {
  const docs = readdirSync(path.join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs.sort()];
}

/** Every ```json and ```sh block of `file`, with the marker on the line before its fence. */
export function examplesOf(file: string): Example[] {
  const lines = readFileSync(path.join(REPO_ROOT, file), 'utf8').split('\n');
  const out: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '');
    if (!open) continue;
    const indent = open[1] ?? '';
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && (lines[i] ?? '').trim() !== '```'; i++) {
      body.push((lines[i] ?? '').slice(indent.length));
    }
    const marker = MARKER.exec(lines[start - 1] ?? '');
    out.push({
      where: `${file}:${start + 1}`,
      file,
      lang: open[2] as 'json' | 'sh',
      ...(marker ? { kind: marker[1] as Kind } : {}),
      note: marker?.[2] ?? '',
      body: `${body.join('\n')}\n`,
    });
  }
  return out;
}

export function allExamples(): Example[] {
  return docFiles().flatMap(examplesOf);
}

/** The whole config document a config-kind example stands for: a fragment is placed where
 *  it belongs (stream records in `stream`, an input or output in a stream of its own). */
export function configOf(kind: ConfigKind, body: string): Record<string, unknown> {
  switch (kind) {
    case 'config':
      return JSON.parse(body) as Record<string, unknown>;
    case 'stream':
      return { stream: JSON.parse(`[${body}]`) as unknown[] };
    case 'input':
      return { stream: [{ 'stream-name': 'example', pause: false, input: [JSON.parse(body)] }] };
    case 'output':
      return {
        stream: [
          {
            'stream-name': 'example',
            pause: false,
            input: [{ type: 'udp', address: '239.1.1.1', port: 1234 }],
            output: [JSON.parse(body)],
          },
        ],
      };
  }
}

/** The config a run block runs against: the nearest config example above it in its file. */
export function companionConfig(run: Example): Record<string, unknown> {
  const before = examplesOf(run.file).filter(
    (e) => Number(e.where.split(':')[1]) < Number(run.where.split(':')[1]),
  );
  const last = before.reverse().find((e) => CONFIG_KINDS.includes(e.kind as ConfigKind));
  return last ? configOf(last.kind as ConfigKind, last.body) : {};
}
