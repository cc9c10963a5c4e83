// The config editor: the config as JSON, checked by the server as you type (the problems of
// `sluice validate`, inline and listed), the plan before apply, apply with If-Match (a
// concurrent change is a 412, said plainly), and the forms of the common edits.
import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, api, apiText, CHANGED_MEANWHILE } from '../api.ts';
import type { ConfigEditor, EditorIssue } from '../editor.ts';
import { me } from '../live.ts';
import { AddStream } from './config-forms.tsx';

interface Check {
  valid: boolean;
  etag: string;
  issues: (EditorIssue & { rule: string; pointer: string })[];
  plan?: { text: string; changed?: boolean };
}

const CHECK_DELAY_MS = 300;

function hasChanges(c: Check | null): boolean {
  return c?.plan?.changed === true;
}

export function ConfigPage() {
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<ConfigEditor | null>(null);
  const etag = useRef('');
  const [check, setCheck] = useState<Check | null>(null);
  const [status, setStatus] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const timer = useRef(0);
  const seq = useRef(0);

  const runCheck = async (text: string) => {
    const n = ++seq.current;
    try {
      const r = await api<Check>('/config/check', { method: 'POST', json: { text } });
      if (n !== seq.current) return;
      setCheck(r.body);
      editor.current?.setIssues(r.body.issues);
    } catch (e) {
      if (n === seq.current) setStatus({ kind: 'error', text: (e as Error).message });
    }
  };

  const load = async () => {
    // The file's own text (its layout and key order), not the parsed document re-printed: the
    // line:column of a problem is then the line:column in the operator's file.
    const [cfg, schema, mod] = await Promise.all([
      apiText('/config/text'),
      api<object>('/config/schema').catch(() => null),
      import('../editor.ts'),
    ]);
    etag.current = cfg.etag ?? '';
    const text = cfg.body;
    if (editor.current) editor.current.setText(text);
    else if (host.current) {
      editor.current = mod.createEditor(host.current, text, schema?.body ?? null, (t) => {
        clearTimeout(timer.current);
        timer.current = window.setTimeout(() => void runCheck(t), CHECK_DELAY_MS);
      });
    }
    await runCheck(text);
  };

  useEffect(() => {
    if (me.value?.role !== 'admin') return;
    load().catch((e: Error) => setStatus({ kind: 'error', text: e.message }));
    return () => {
      clearTimeout(timer.current);
      editor.current?.destroy();
      editor.current = null;
    };
  }, [me.value?.role]);

  if (me.value && me.value.role !== 'admin') {
    return (
      <section class="page">
        <h1>Config</h1>
        <p>Only an admin may read and edit the config.</p>
      </section>
    );
  }

  const apply = async () => {
    const ed = editor.current;
    if (!ed) return;
    setBusy(true);
    setStatus(null);
    try {
      const r = await api<{ etag: string; plan: { summary: Record<string, number> } }>('/config', {
        method: 'PUT',
        headers: { 'if-match': etag.current, 'content-type': 'application/json' },
        body: ed.text(),
      });
      etag.current = r.body.etag;
      const s = r.body.plan.summary;
      setStatus({
        kind: 'ok',
        text: `Applied: ${s['add'] ?? 0} to add, ${s['change'] ?? 0} to change, ${s['replace'] ?? 0} to replace, ${s['destroy'] ?? 0} to destroy.`,
      });
      await load();
    } catch (e) {
      const err = e as ApiError;
      setStatus({
        kind: 'error',
        text: err.status === 412 ? CHANGED_MEANWHILE : `Not applied: ${err.message}`,
      });
    } finally {
      setBusy(false);
    }
  };

  const errors = check?.issues ?? [];
  return (
    <section class="page config" aria-labelledby="config-h">
      <div class="toolbar">
        <h1 id="config-h">Config</h1>
        <button type="button" onClick={() => void load()} disabled={busy}>
          Reload
        </button>
        <button
          type="button"
          class="primary"
          data-testid="apply"
          disabled={busy || !check?.valid || !hasChanges(check)}
          onClick={() => void apply()}
        >
          Apply
        </button>
      </div>
      {status ? (
        <p class={status.kind === 'ok' ? 'ok-text' : 'error'} role="status" data-testid="status">
          {status.text}
        </p>
      ) : null}
      <div class="editor" ref={host} />
      <div class="check" aria-live="polite">
        {errors.length ? (
          <ul class="issues" aria-label="Problems">
            {errors.map((i) => (
              <li key={i.text} class={i.severity} data-testid="issue">
                {i.text}
              </li>
            ))}
          </ul>
        ) : null}
        {check?.plan ? (
          <>
            <h2>Plan</h2>
            <pre class="plan" data-testid="plan">
              {check.plan.text}
            </pre>
          </>
        ) : null}
      </div>
      <AddStream onDone={() => void load()} />
    </section>
  );
}
