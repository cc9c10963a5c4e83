// The config editor (loaded on demand, its own chunk): CodeMirror 6 with JSON, completion from
// the config schema (codemirror-json-schema), and diagnostics the server sends (the problems of
// `sluice validate`, so the editor and the CLI never disagree).
import { json, jsonLanguage } from '@codemirror/lang-json';
import { type Diagnostic, lintGutter, setDiagnostics } from '@codemirror/lint';
import { EditorState } from '@codemirror/state';
import { basicSetup, EditorView } from 'codemirror';
import { jsonCompletion, stateExtensions } from 'codemirror-json-schema';

export interface EditorIssue {
  severity: 'error' | 'warning';
  line?: number;
  column?: number;
  text: string;
}

export interface ConfigEditor {
  text(): string;
  setText(text: string): void;
  setIssues(issues: EditorIssue[]): void;
  destroy(): void;
}

export function createEditor(
  parent: HTMLElement,
  text: string,
  schema: object | null,
  onChange: (text: string) => void,
): ConfigEditor {
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: text,
      extensions: [
        basicSetup,
        json(),
        lintGutter(),
        ...(schema
          ? [
              jsonLanguage.data.of({ autocomplete: jsonCompletion() }),
              stateExtensions(schema as Parameters<typeof stateExtensions>[0]),
            ]
          : []),
        EditorView.contentAttributes.of({ 'aria-label': 'Config JSON' }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) onChange(u.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    text: () => view.state.doc.toString(),
    setText(t) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: t } });
    },
    setIssues(issues) {
      const doc = view.state.doc;
      const diagnostics: Diagnostic[] = issues.map((i) => {
        const line = doc.line(Math.min(Math.max(1, i.line ?? 1), doc.lines));
        const from = Math.min(line.from + Math.max(0, (i.column ?? 1) - 1), line.to);
        return { from, to: Math.max(from, line.to), severity: i.severity, message: i.text };
      });
      view.dispatch(setDiagnostics(view.state, diagnostics));
    },
    destroy: () => view.destroy(),
  };
}
