/**
 * The staging handshake of a conv call shared with a worker: the calling thread copies the batch's images into
 * wasm memory and publishes in `d[slot]` how many are there; the worker waits on that count and starts on the
 * first images while the rest are copied. Unshared (this thread only), everything is copied at once.
 *
 * `copy(from, to)` copies images [from, to). Shared, they go in groups of `step`, the count published after each.
 * The count ends at `n` even when copying throws (the error then propagates), so the worker never waits forever.
 */
export function stageImages(
  d: Int32Array,
  slot: number,
  n: number,
  shared: boolean,
  step: number,
  copy: (from: number, to: number) => void,
): void {
  let staged = 0;
  const publish = (count: number): void => {
    Atomics.store(d, slot, count);
    if (shared) Atomics.notify(d, slot);
  };
  try {
    if (!shared) {
      copy(0, n);
      staged = n;
    } else {
      while (staged < n) {
        const next = Math.min(n, staged + step);
        copy(staged, next);
        staged = next;
        publish(staged);
      }
    }
  } finally {
    if (staged < n) staged = n;
    publish(staged);
  }
}
