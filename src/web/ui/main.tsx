// The dashboard's entry: styles, who is signed in, the events stream, then the app.
import { render } from 'preact';
import { App } from './app.tsx';
import { connect, loadMe } from './live.ts';
import './style.css';

const root = document.getElementById('app');
if (root) {
  connect();
  loadMe()
    .catch(() => {})
    .finally(() => {
      root.textContent = '';
      render(<App />, root);
    });
}
