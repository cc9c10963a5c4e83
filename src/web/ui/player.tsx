// The built-in player: hls.js (loaded on first use, its own chunk) on a <video>; Safari-like
// browsers that play HLS natively get the URL directly.
import { useEffect, useRef, useState } from 'preact/hooks';

/** A playlist that answers 404 (the stream has no segment yet) is asked again this often, at
 *  most this many times. */
const NOT_READY_RETRY_MS = 1000;
const NOT_READY_TRIES = 30;

export function Player({ src, onClose }: { src: string; onClose: () => void }) {
  const video = useRef<HTMLVideoElement>(null);
  const [error, setError] = useState('');
  const [waiting, setWaiting] = useState(false);
  useEffect(() => {
    const v = video.current;
    if (!v) return;
    let destroy = () => {};
    let gone = false;
    if (v.canPlayType('application/vnd.apple.mpegurl') && !('MediaSource' in window)) {
      v.src = src;
      void v.play().catch(() => {});
    } else {
      void import('hls.js').then(({ default: Hls }) => {
        if (gone) return;
        if (!Hls.isSupported()) {
          setError('this browser cannot play HLS');
          return;
        }
        const hls = new Hls({ lowLatencyMode: false });
        let tries = 0;
        let retry = 0;
        hls.on(Hls.Events.ERROR, (_e, data) => {
          if (!data.fatal) return;
          // A stream that has just started answers 404 "stream not ready" until its first
          // segments exist: wait for them instead of giving up.
          if (
            data.details === Hls.ErrorDetails.MANIFEST_LOAD_ERROR &&
            data.response?.code === 404 &&
            tries++ < NOT_READY_TRIES
          ) {
            setError('');
            setWaiting(true);
            retry = window.setTimeout(() => hls.loadSource(src), NOT_READY_RETRY_MS);
            return;
          }
          setWaiting(false);
          setError(`${data.type}: ${data.details}`);
        });
        hls.loadSource(src);
        hls.attachMedia(v);
        hls.on(Hls.Events.MANIFEST_PARSED, () => {
          setWaiting(false);
          void v.play().catch(() => {});
        });
        destroy = () => {
          clearTimeout(retry);
          hls.destroy();
        };
      });
    }
    return () => {
      gone = true;
      destroy();
    };
  }, [src]);
  return (
    <section class="player" aria-label="Player">
      <div class="player-bar">
        <code>{src}</code>
        <button type="button" onClick={onClose}>
          Close player
        </button>
      </div>
      <video ref={video} controls muted playsInline data-testid="player" />
      {waiting ? (
        <p class="muted" role="status">
          Waiting for the stream's first segments…
        </p>
      ) : null}
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </section>
  );
}
