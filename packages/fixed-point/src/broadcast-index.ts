// Row-major broadcasting of two integer operands (numpy rules), for the elementwise modules.
import { broadcastShapes } from '@qtk/tensor';

/** The broadcast output shape and, for each output element, the flat index into each operand. */
export interface BroadcastIndex {
  readonly shape: number[];
  readonly ia: Int32Array;
  readonly ib: Int32Array;
}

function indexInto(out: readonly number[], shape: readonly number[]): Int32Array {
  const n = out.reduce((p, d) => p * d, 1);
  const idx = new Int32Array(n);
  const rank = out.length;
  const off = rank - shape.length;
  // strides of `shape` seen from the output's axes (0 on broadcast axes)
  const strides = new Array<number>(rank).fill(0);
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d + off] = shape[d] === 1 ? 0 : s;
    s *= shape[d]!;
  }
  const counter = new Array<number>(rank).fill(0);
  let cur = 0;
  for (let i = 0; i < n; i++) {
    idx[i] = cur;
    for (let d = rank - 1; d >= 0; d--) {
      counter[d]!++;
      cur += strides[d]!;
      if (counter[d]! < out[d]!) break;
      cur -= strides[d]! * out[d]!;
      counter[d] = 0;
    }
  }
  return idx;
}

export function broadcastIndex(a: readonly number[], b: readonly number[]): BroadcastIndex {
  const shape = broadcastShapes([...a], [...b]);
  return { shape, ia: indexInto(shape, a), ib: indexInto(shape, b) };
}
