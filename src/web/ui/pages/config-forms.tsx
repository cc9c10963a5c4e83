// Forms for the common edits, each one merge patch through the config API: add a stream from an
// input URL (shown as a plan first, then created).
import { useState } from 'preact/hooks';
import { type ApiError, api } from '../api.ts';
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
