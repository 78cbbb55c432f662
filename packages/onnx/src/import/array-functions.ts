// Runtime functions for ONNX's broadcasting and normalization operators that have no exact @qtk/tensor
// equivalent: Expand (two-way broadcast), Tile, InstanceNormalization, Mod and ScatterND. Registered in the op catalog by function-ops.ts.
// the functions below are registered in the op catalog by function-ops.ts
import './function-ops.js';
import { registerTraceable } from '@qtk/ir';
import {
  ShapeError,
  Tensor,
  add,
  broadcastBinary,
  broadcastShapes,
  cat,
  contiguous,
  expand,
  mean,
  mul,
  reshape,
  rsqrt,
  sub,
} from '@qtk/tensor';

/**
 * ONNX Expand: broadcasts x and `shape` against each other (a 1 in `shape` keeps x's dim, x may have more dims).
 * With `batchSource`, the entries `batchEntries` of `shape` are its dim `batchAxis` at run time (a free batch).
 */
export const onnxExpand = registerTraceable(
  'onnx.expand',
  (
    x: Tensor,
    fixedShape: readonly number[],
    batchSource?: Tensor,
    batchAxis = 0,
    batchEntries: readonly number[] = [],
  ): Tensor => {
    const shape = batchSource
      ? fixedShape.map((d, i) => (batchEntries.includes(i) ? batchSource.shape[batchAxis]! : d))
      : fixedShape;
    let target: number[];
    try {
      target = broadcastShapes(x.shape, shape);
    } catch {
      throw new ShapeError(`onnx.expand: [${x.shape.join(', ')}] cannot broadcast with shape [${shape.join(', ')}]`);
    }
    return contiguous(expand(x, target));
  },
);

/** ONNX Tile: each axis repeated repeats[axis] times. */
export const onnxTile = registerTraceable('onnx.tile', (x: Tensor, repeats: readonly number[]): Tensor => {
  if (repeats.length !== x.ndim || repeats.some((r) => !Number.isSafeInteger(r) || r < 0)) {
    throw new ShapeError(
      `onnx.tile: repeats [${repeats.join(', ')}] must be ${x.ndim} non-negative integers for input [${x.shape.join(', ')}]`,
    );
  }
  let y = x;
  repeats.forEach((r, axis) => {
    if (r !== 1) y = cat(new Array<Tensor>(r).fill(y), axis);
  });
  return y;
});

/** ONNX InstanceNormalization: each (sample, channel) normalized over its spatial dims, then scale[c]·y + bias[c]. */
export const onnxInstanceNorm = registerTraceable(
  'onnx.instanceNorm',
  (x: Tensor, scale: Tensor, bias: Tensor, eps: number): Tensor => {
    const axes = x.shape.slice(2).map((_, i) => i + 2);
    const m = mean(x, axes, true);
    const centred = sub(x, m);
    const variance = mean(mul(centred, centred), axes, true);
    const epsT = new Tensor({ data: Float32Array.of(eps), shape: [], dtype: 'float32' });
    const y = mul(centred, rsqrt(add(variance, epsT)));
    const perChannel = [x.shape[1]!, ...axes.map(() => 1)];
    return add(mul(y, reshape(scale, perChannel)), reshape(bias, perChannel));
  },
);

/** ONNX Mod: the remainder with the divisor's sign (fmod = 0, Python's %), or the dividend's (fmod = 1, C's fmod). */
export const onnxMod = registerTraceable('onnx.mod', (a: Tensor, b: Tensor, fmod: boolean): Tensor => {
  const dtype = a.dtype === 'float32' || b.dtype === 'float32' ? 'float32' : 'int32';
  return broadcastBinary(a, b, dtype, (x, y) => {
    const r = x % y;
    return fmod || r === 0 || r < 0 === y < 0 ? r : r + y;
  });
});

/** ScatterND's `reduction`: how an update combines with the value it lands on (opset 16: add, mul; 18: max, min). */
export type ScatterReduction = 'none' | 'add' | 'mul' | 'max' | 'min';

const COMBINE: Record<ScatterReduction, (old: number, update: number) => number> = {
  none: (_, u) => u,
  add: (o, u) => o + u,
  mul: (o, u) => o * u,
  max: (o, u) => Math.max(o, u),
  min: (o, u) => Math.min(o, u),
};

/**
 * ONNX ScatterND: a copy of `data` with the slices `indices` point at replaced by `updates`, or combined with
 * them by `reduction` (in index order, so repeated indices accumulate).
 */
export const onnxScatterND = registerTraceable(
  'onnx.scatterND',
  (data: Tensor, indices: Tensor, updates: Tensor, reduction: ScatterReduction = 'none'): Tensor => {
    const combine = COMBINE[reduction];
    if (!combine) throw new ShapeError(`onnx.scatterND: reduction must be one of ${Object.keys(COMBINE).join(', ')}`);
    const k = indices.shape[indices.ndim - 1] ?? 0;
    if (indices.ndim < 1 || k > data.ndim)
      throw new ShapeError(
        `onnx.scatterND: indices [${indices.shape.join(', ')}] must end in at most rank ${data.ndim} of data [${data.shape.join(', ')}]`,
      );
    const sliceSize = data.shape.slice(k).reduce((p, d) => p * d, 1);
    const count = indices.size / (k || 1);
    if (updates.size !== count * sliceSize)
      throw new ShapeError(
        `onnx.scatterND: updates [${updates.shape.join(', ')}] must hold ${count} slices of ${sliceSize} values`,
      );
    const out = contiguous(data).values().slice();
    const idx = indices.values();
    const upd = contiguous(updates).values();
    const strides = data.shape.map((_, i) => data.shape.slice(i + 1).reduce((p, d) => p * d, 1));
    for (let j = 0; j < count; j++) {
      let offset = 0;
      for (let a = 0; a < k; a++) {
        const n = data.shape[a]!;
        const v = Number(idx[j * k + a]);
        const i = v < 0 ? v + n : v;
        if (i < 0 || i >= n)
          throw new ShapeError(`onnx.scatterND: index ${v} is out of range for axis ${a} of size ${n}`);
        offset += i * strides[a]!;
      }
      for (let e = 0; e < sliceSize; e++) out[offset + e] = combine(out[offset + e]!, upd[j * sliceSize + e]!);
    }
    return new Tensor({ data: out, shape: [...data.shape], dtype: data.dtype });
  },
);
