// Forms for the common edits, each one merge patch through the config API: add a stream from an
// input URL (one POST; its plan summary is reported), change an input of a stream (the patch and
// its plan shown first, then applied with If-Match).
import { useState } from 'preact/hooks';
import { type ApiError, api, CHANGED_MEANWHILE } from '../api.ts';
import { inputFromUrl } from '../input-url.ts';
import { rows } from '../live.ts';

interface PlanAnswer {
  plan: { summary: Record<string, number> };
}

function nextId(): number {
  let max = 0;
  for (const r of rows.values()) max = Math.max(max, r.id);
  return max + 1;
}

export function AddStream({ onDone }: { onDone: () => void }) {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [hls, setHls] = useState(true);
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const input = inputFromUrl(url);
    if (input instanceof Error) {
      setMsg({ ok: false, text: input.message });
      return;
    }
    const record = {
      id: nextId(),
      'stream-name': name.trim(),
      pause: false,
      ...(hls ? { 'ott-hls': 1 } : {}),
      input: [input],
    };
    setBusy(true);
    try {
      const r = await api<PlanAnswer>('/config/stream', { method: 'POST', json: record });
      const s = r.body.plan.summary;
      setMsg({
        ok: true,
        text: `Stream ${record['stream-name']} added (${s['add'] ?? 0} to add).`,
      });
      setName('');
      setUrl('');
      onDone();
    } catch (err) {
      setMsg({ ok: false, text: (err as ApiError).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="form" onSubmit={submit} aria-labelledby="add-h">
      <h2 id="add-h">Add a stream</h2>
      <label>
        Name{' '}
        <input
          required
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
          name="stream-name"
        />
      </label>
      <label>
        Input URL{' '}
        <input
          required
          value={url}
          onInput={(e) => setUrl(e.currentTarget.value)}
          name="input-url"
          placeholder="udp://239.1.1.1:1234"
        />
      </label>
      <label>
        <input type="checkbox" checked={hls} onChange={(e) => setHls(e.currentTarget.checked)} />{' '}
        HLS
      </label>
      <button type="submit" disabled={busy}>
        Add
      </button>
      {msg ? (
        <p class={msg.ok ? 'ok-text' : 'error'} role="status" data-testid="add-status">
          {msg.text}
        </p>
      ) : null}
    </form>
  );
}

interface PlanField {
  path: string;
  before: unknown;
  after: unknown;
}
interface PlanJson {
  changed: boolean;
  summary: Record<string, number>;
  changes: { action: string; label: string; fields: PlanField[] }[];
}

const ACTION_MARK: Record<string, string> = {
  create: '+',
  update: '~',
  replace: '-/+',
  destroy: '-',
};

/** The plan of a dry run as lines in the manner of `reconcile --plan`. */
export function planLines(plan: PlanJson): string {
  if (!plan.changed) return 'No changes.';
  const out: string[] = [];
  for (const c of plan.changes) {
    out.push(`${ACTION_MARK[c.action] ?? c.action} ${c.label}`);
    for (const f of c.fields) {
      out.push(`    ${f.path}: ${JSON.stringify(f.before)} → ${JSON.stringify(f.after)}`);
    }
  }
  return out.join('\n');
}

/** The text of an input record as a URL where it has one (the form's starting value). */
function urlOf(input: Record<string, unknown>): string {
  const t = String(input['type'] ?? '');
  for (const k of ['uri', 'url']) if (typeof input[k] === 'string') return input[k] as string;
  if (typeof input['port'] === 'number') return `${t}://${input['address'] ?? ''}:${input['port']}`;
  return '';
}

/**
 * Change one input of a stream to the input of a URL: the merge patch (`input` is an array, so
 * the patch carries the whole list with the one record replaced) and its plan (a dry run with
 * If-Match) are shown first; Apply sends the same patch with the same If-Match.
 */
export function ChangeInput({ stream, onDone }: { stream: string; onDone: () => void }) {
  const [rec, setRec] = useState<{ input: Record<string, unknown>[]; etag: string } | null>(null);
  const [index, setIndex] = useState(0);
  const [url, setUrl] = useState('');
  const [preview, setPreview] = useState<{ patch: object; plan: string } | null>(null);
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const path = `/config/stream/${encodeURIComponent(stream)}`;

  const open = async () => {
    setMsg(null);
    setPreview(null);
    try {
      const r = await api<{ input?: Record<string, unknown>[] }>(path);
      const input = r.body.input ?? [];
      setRec({ input, etag: r.etag ?? '' });
      setIndex(0);
      setUrl(input[0] ? urlOf(input[0]) : '');
    } catch (e) {
      setMsg({ ok: false, text: (e as ApiError).message });
    }
  };

  const send = async (dryRun: boolean, patch: object) =>
    api<{ plan: PlanJson }>(`${path}${dryRun ? '?dry-run=true' : ''}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json', 'if-match': rec!.etag },
      json: patch,
    });

  const explain = (e: unknown) => {
    const err = e as ApiError;
    return err.status === 412 ? CHANGED_MEANWHILE : `Not applied: ${err.message}`;
  };

  const onPreview = async (e: Event) => {
    e.preventDefault();
    if (!rec) return;
    const input = inputFromUrl(url);
    if (input instanceof Error) {
      setMsg({ ok: false, text: input.message });
      return;
    }
    const patch = { input: rec.input.map((x, i) => (i === index ? input : x)) };
    setBusy(true);
    setMsg(null);
    try {
      const r = await send(true, patch);
      setPreview({ patch, plan: planLines(r.body.plan) });
    } catch (err) {
      setPreview(null);
      setMsg({ ok: false, text: explain(err) });
    } finally {
      setBusy(false);
    }
  };

  const onApply = async () => {
    if (!preview) return;
    setBusy(true);
    try {
      const r = await send(false, preview.patch);
      const s = r.body.plan.summary;
      setMsg({
        ok: true,
        text: `Applied: ${s['change'] ?? 0} to change, ${s['replace'] ?? 0} to replace.`,
      });
      setPreview(null);
      setRec(null);
      onDone();
    } catch (err) {
      setMsg({ ok: false, text: explain(err) });
    } finally {
      setBusy(false);
    }
  };

  if (!rec) {
    return (
      <div class="form">
        <button type="button" onClick={() => void open()} data-testid="change-input">
          Change an input…
        </button>
        {msg ? (
          <p class={msg.ok ? 'ok-text' : 'error'} role="status" data-testid="change-status">
            {msg.text}
          </p>
        ) : null}
      </div>
    );
  }
  return (
    <form class="form" onSubmit={onPreview} aria-labelledby="chin-h">
      <h3 id="chin-h">Change an input</h3>
      <label>
        Input{' '}
        <select
          value={String(index)}
          onChange={(e) => {
            const i = Number(e.currentTarget.value);
            setIndex(i);
            setUrl(rec.input[i] ? urlOf(rec.input[i]!) : '');
            setPreview(null);
          }}
        >
          {rec.input.map((x, i) => (
            <option key={i} value={String(i)}>
              {i + 1}: {String(x['type'] ?? '')}
            </option>
          ))}
        </select>
      </label>
      <label>
        New URL{' '}
        <input
          required
          name="input-url"
          value={url}
          onInput={(e) => {
            setUrl(e.currentTarget.value);
            setPreview(null);
          }}
        />
      </label>
      <button type="submit" disabled={busy}>
        Preview
      </button>
      <button type="button" onClick={() => setRec(null)}>
        Cancel
      </button>
      {preview ? (
        <div class="preview">
          <h4>Merge patch</h4>
          <pre data-testid="change-patch">{JSON.stringify(preview.patch, null, 2)}</pre>
          <h4>Plan</h4>
          <pre class="plan" data-testid="change-plan">
            {preview.plan}
          </pre>
          <button
            type="button"
            class="primary"
            disabled={busy}
            onClick={() => void onApply()}
            data-testid="change-apply"
          >
            Apply
          </button>
        </div>
      ) : null}
      {msg ? (
        <p class={msg.ok ? 'ok-text' : 'error'} role="status" data-testid="change-status">
          {msg.text}
        </p>
      ) : null}
    </form>
  );
}
