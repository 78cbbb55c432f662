// Row-major broadcasting of two integer operands (numpy rules), for the elementwise modules.
import { broadcastShapes, forEachReduced } from '@qtk/tensor';

/** The broadcast output shape and, for each output element, the flat index into each operand. */
export interface BroadcastIndex {
  readonly shape: number[];
  readonly ia: Int32Array;
  readonly ib: Int32Array;
}

function indexInto(out: readonly number[], shape: readonly number[]): Int32Array {
  const idx = new Int32Array(out.reduce((p, d) => p * d, 1));
  const off = out.length - shape.length;
  // an operand is its broadcast output reduced over the axes it lacks or holds at size 1
  const broadcastAxes = out.map((_, d) => d).filter((d) => d < off || shape[d - off] === 1);
  forEachReduced(out, broadcastAxes, (i, o) => {
    idx[i] = o;
  });
  return idx;
}

export function broadcastIndex(a: readonly number[], b: readonly number[]): BroadcastIndex {
  const shape = broadcastShapes([...a], [...b]);
  return { shape, ia: indexInto(shape, a), ib: indexInto(shape, b) };
}
