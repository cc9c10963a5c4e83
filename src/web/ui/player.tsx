// The built-in player: hls.js (loaded on first use, its own chunk) on a <video>; Safari-like
// browsers that play HLS natively get the URL directly.
import { useEffect, useRef, useState } from 'preact/hooks';

export function Player({ src, onClose }: { src: string; onClose: () => void }) {
  const video = useRef<HTMLVideoElement>(null);
  const [error, setError] = useState('');
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
        hls.on(Hls.Events.ERROR, (_e, data) => {
          if (data.fatal) setError(`${data.type}: ${data.details}`);
        });
        hls.loadSource(src);
        hls.attachMedia(v);
        hls.on(Hls.Events.MANIFEST_PARSED, () => void v.play().catch(() => {}));
        destroy = () => hls.destroy();
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
      {error ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </section>
  );
}
