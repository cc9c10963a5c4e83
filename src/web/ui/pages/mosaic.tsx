// The mosaic: each stream's thumbnail (`/{name}/preview.jpg`, when the mosaic is on) or, when
// it is off, a grid of stream cards with their state.
import { computed } from '@preact/signals';
import { STATE_CLASS } from '../format.ts';
import { me, rows, version } from '../live.ts';
import { href } from '../router.ts';

/** Cards drawn at most: the mosaic is for looking, the streams page is for 1,000 rows. */
const MAX_CARDS = 200;

const cards = computed(() => {
  void version.value;
  return [...rows.values()].slice(0, MAX_CARDS);
});

export function MosaicPage() {
  // Asking for thumbnails the server does not make only draws blank boxes.
  const thumbs = me.value?.mosaic === true;
  return (
    <section class="page" aria-labelledby="mo-h">
      <h1 id="mo-h">Mosaic</h1>
      {thumbs ? null : (
        <p class="muted" data-testid="mosaic-off">
          Thumbnails are off: the cards show each stream's state only. To see pictures, set{' '}
          <code>
            "mosaic": {'{'}"enable": true{'}'}
          </code>{' '}
          in the config (a stream with <code>enable-mosaic</code> false stays out of it;
          docs/mosaic.md).
        </p>
      )}
      <div class="mosaic">
        {cards.value.map((r) => (
          <a key={r.key} class="card" href={href('stream', r.key)}>
            {thumbs ? (
              <img
                src={`/${encodeURIComponent(r.name)}/preview.jpg`}
                alt=""
                loading="lazy"
                onError={(e) => {
                  (e.currentTarget as HTMLImageElement).style.visibility = 'hidden';
                }}
              />
            ) : null}
            <span>{r.title || r.name}</span>
            <span class={`badge ${STATE_CLASS[r.state] ?? 'muted'}`}>{r.state}</span>
          </a>
        ))}
      </div>
    </section>
  );
}
