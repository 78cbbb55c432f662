// Runtime functions for ONNX operators that have no exact @qtk/tensor equivalent. Registered as
// traceables (call_function targets `onnx.*`), so imported graphs serialize and later passes see them.
// the functions below are registered in the op catalog by function-ops.ts
import './function-ops.js';
import { registerTraceable } from '@qtk/ir';
import {
  InvalidArgumentError,
  ShapeError,
  Tensor,
  cat,
  clamp,
  max as maxAlong,
  min as minAlong,
  maximum,
  mean,
  minimum,
  pad as padTensor,
  permute,
  reshape as reshapeTensor,
  slice as sliceTensor,
  sum,
  toType,
  add,
  mul,
  contiguous,
  softmax,
  logSoftmax,
  sub,
  div,
  sqrt,
  reciprocal,
  avgPool2d,
  windowOutSize,
} from '@qtk/tensor';

function norm(axis: number, rank: number): number {
  return axis < 0 ? axis + rank : axis;
}

/** ONNX Reshape: 0 copies the input dim (unless allowZero, when it is a zero-size dim), -1 is inferred. */
export const onnxReshape = registerTraceable(
  'onnx.reshape',
  (x: Tensor, shape: readonly number[], allowZero = false): Tensor => {
    const target = allowZero ? [...shape] : shape.map((d, i) => (d === 0 ? x.shape[i]! : d));
    return reshapeTensor(x.dtype === 'float32' ? x : contiguous(x), target);
  },
);

/** ONNX Flatten: [prod(dims before axis), prod(dims from axis)]. */
export const onnxFlatten = registerTraceable('onnx.flatten', (x: Tensor, axis: number): Tensor => {
  const a = norm(axis, x.ndim);
  const outer = x.shape.slice(0, a).reduce((p, d) => p * d, 1);
  return reshapeTensor(x, [outer, x.size / (outer || 1)]);
});

/** ONNX Slice with per-axis starts, ends and steps (already clamped to the int32 range). */
export const onnxSlice = registerTraceable(
  'onnx.slice',
  (
    x: Tensor,
    starts: readonly number[],
    ends: readonly number[],
    axes: readonly number[],
    steps: readonly number[],
  ): Tensor => {
    let y = x;
    axes.forEach((ax, i) => {
      const a = norm(ax, x.ndim);
      const n = x.shape[a]!;
      const step = steps[i] ?? 1;
      let s = starts[i]!;
      let e = ends[i]!;
      if (step < 0) {
        // Python slicing with negative steps treats -1 as "last", so pass an explicit end past the start instead.
        s = s < 0 ? s + n : s;
        s = Math.min(Math.max(s, -1), n - 1);
        e = e < 0 ? e + n : e;
        e = Math.min(Math.max(e, -1), n - 1);
        y = sliceTensor(y, { axis: a, start: s, end: e < 0 ? undefined : e, step });
        return;
      }
      y = sliceTensor(y, { axis: a, start: s, end: e, step });
    });
    return y;
  },
);

/** Pad mode 'wrap' (opset 19): output j of each axis is input (j − begin) mod n, so the pads repeat the other end. */
function wrapPad(x: Tensor, pads: readonly number[]): Tensor {
  const r = x.ndim;
  let y = x;
  for (let a = 0; a < r; a++) {
    const n = x.shape[a]!;
    const [begin, end] = [pads[a]!, pads[r + a]!];
    if (begin === 0 && end === 0) continue;
    if (n === 0) throw new ShapeError(`onnx.pad: mode 'wrap' cannot pad axis ${a} of size 0`);
    const parts: Tensor[] = [];
    // runs of consecutive input indices, one slice each
    for (let j = 0; j < n + begin + end; ) {
      const k = (((j - begin) % n) + n) % n;
      const len = Math.min(n - k, n + begin + end - j);
      parts.push(sliceTensor(y, { axis: a, start: k, end: k + len }));
      j += len;
    }
    y = parts.length === 0 ? sliceTensor(y, { axis: a, start: 0, end: 0 }) : cat(parts, a);
  }
  return y;
}

/** ONNX Pad: pads as [begin_0, ..., begin_n, end_0, ..., end_n]; modes constant, reflect, edge, wrap. */
export const onnxPad = registerTraceable(
  'onnx.pad',
  (x: Tensor, pads: readonly number[], mode: string, value: number): Tensor => {
    const r = x.ndim;
    if (pads.length !== 2 * r)
      throw new ShapeError(
        `onnx.pad: pads must have 2 * rank = ${2 * r} entries for input [${x.shape.join(', ')}], got ${pads.length}`,
      );
    if (mode === 'wrap') return wrapPad(x, pads);
    const torchPads: number[] = [];
    for (let d = r - 1; d >= 0; d--) torchPads.push(pads[d]!, pads[r + d]!);
    const m = mode === 'edge' ? 'replicate' : mode === 'reflect' ? 'reflect' : 'constant';
    return padTensor(x, torchPads, m, value);
  },
);

/** ONNX Gather along `axis` with integer indices of any shape (negative indices count from the end). */
export const onnxGather = registerTraceable('onnx.gather', (x: Tensor, indices: Tensor, axis: number): Tensor => {
  const a = norm(axis, x.ndim);
  const n = x.shape[a]!;
  const idx = Array.from(indices.values() as ArrayLike<number>, (v) => {
    const k = v < 0 ? v + n : v;
    if (k < 0 || k >= n)
      throw new InvalidArgumentError(`onnx.gather: index ${v} is out of range for axis ${a} of size ${n}`);
    return k;
  });
  const parts = idx.map((k) => sliceTensor(x, { axis: a, start: k, end: k + 1 }));
  const joined = parts.length === 0 ? sliceTensor(x, { axis: a, start: 0, end: 0 }) : cat(parts, a);
  const shape = [...x.shape.slice(0, a), ...indices.shape, ...x.shape.slice(a + 1)];
  return reshapeTensor(contiguous(joined), shape);
});

/** ONNX Transpose (perm defaults to reversing the dims). */
export const onnxTranspose = registerTraceable(
  'onnx.transpose',
  (x: Tensor, perm: readonly number[] | null): Tensor => permute(x, perm ?? x.shape.map((_, i) => x.ndim - 1 - i)),
);

export const onnxSqueeze = registerTraceable('onnx.squeeze', (x: Tensor, axes: readonly number[] | null): Tensor => {
  const drop = new Set((axes ?? x.shape.flatMap((d, i) => (d === 1 ? [i] : []))).map((a) => norm(a, x.ndim)));
  for (const a of drop)
    if (x.shape[a] !== 1) throw new ShapeError(`onnx.squeeze: axis ${a} of [${x.shape.join(', ')}] is not 1`);
  return reshapeTensor(
    x.dtype === 'float32' ? x : contiguous(x),
    x.shape.filter((_, i) => !drop.has(i)),
  );
});

export const onnxUnsqueeze = registerTraceable('onnx.unsqueeze', (x: Tensor, axes: readonly number[]): Tensor => {
  const rank = x.ndim + axes.length;
  const ins = new Set(axes.map((a) => norm(a, rank)));
  const shape: number[] = [];
  let k = 0;
  for (let i = 0; i < rank; i++) shape.push(ins.has(i) ? 1 : x.shape[k++]!);
  return reshapeTensor(x.dtype === 'float32' ? x : contiguous(x), shape);
});

/** ReduceSum / ReduceMean / ReduceMax / ReduceMin over `axes` (all when null). */
export const onnxReduce = registerTraceable(
  'onnx.reduce',
  (x: Tensor, kind: 'sum' | 'mean' | 'max' | 'min', axes: readonly number[] | null, keepdims: boolean): Tensor => {
    const ax = (axes ?? x.shape.map((_, i) => i)).map((a) => norm(a, x.ndim));
    if (kind === 'sum') return sum(x, ax, keepdims);
    if (kind === 'mean') return mean(x, ax, keepdims);
    const along = kind === 'max' ? maxAlong : minAlong;
    let y = x;
    for (const a of [...ax].sort((p, q) => q - p)) y = along(y, a, true);
    return keepdims
      ? y
      : reshapeTensor(
          y,
          x.shape.filter((_, i) => !ax.includes(i)),
        );
  },
);

/** Clip with tensor bounds (either may be null). */
export const onnxClip = registerTraceable(
  'onnx.clip',
  (x: Tensor, lo: Tensor | number | null, hi: Tensor | number | null): Tensor => {
    if ((lo === null || typeof lo === 'number') && (hi === null || typeof hi === 'number')) return clamp(x, lo, hi);
    let y = x;
    if (lo !== null)
      y = maximum(
        y,
        typeof lo === 'number' ? new Tensor({ data: Float32Array.of(lo), shape: [], dtype: 'float32' }) : lo,
      );
    if (hi !== null)
      y = minimum(
        y,
        typeof hi === 'number' ? new Tensor({ data: Float32Array.of(hi), shape: [], dtype: 'float32' }) : hi,
      );
    return y;
  },
);

/** PRelu with a slope broadcast against x. */
export const onnxPrelu = registerTraceable('onnx.prelu', (x: Tensor, slope: Tensor): Tensor => {
  const zero = new Tensor({ data: new Float32Array(1), shape: [], dtype: 'float32' });
  return add(maximum(x, zero), mul(minimum(x, zero), slope));
});

/** HardSigmoid max(0, min(1, alpha * x + beta)). */
export const onnxHardSigmoid = registerTraceable(
  'onnx.hardSigmoid',
  (x: Tensor, alpha: number, beta: number): Tensor =>
    clamp(
      add(
        mul(x, new Tensor({ data: Float32Array.of(alpha), shape: [], dtype: 'float32' })),
        new Tensor({ data: Float32Array.of(beta), shape: [], dtype: 'float32' }),
      ),
      0,
      1,
    ),
);

/** Cast between float32, int32 (all ONNX integer types) and bool. */
export const onnxCast = registerTraceable(
  'onnx.cast',
  (x: Tensor, to: 'float32' | 'int32' | 'bool'): Tensor => (x.dtype === to ? x : toType(x, to)),
);

/** Softmax / LogSoftmax of opsets before 13: over all dims from `axis`, as one flattened axis. */
export const onnxSoftmaxCoerced = registerTraceable(
  'onnx.softmaxCoerced',
  (x: Tensor, axis: number, log: boolean): Tensor => {
    const a = norm(axis, x.ndim);
    const outer = x.shape.slice(0, a).reduce((p, d) => p * d, 1);
    const flat = reshapeTensor(x, [outer, x.size / (outer || 1)]);
    const y = log ? logSoftmax(flat, -1) : softmax(flat, -1);
    return reshapeTensor(y, x.shape);
  },
);

/** Max over all spatial dims, keeping them as size 1. */
export const onnxGlobalMaxPool = registerTraceable('onnx.globalMaxPool', (x: Tensor): Tensor => {
  let y = x;
  for (let a = x.ndim - 1; a >= 2; a--) y = maxAlong(y, a, true);
  return y;
});

/** LayerNormalization's optional outputs: mean and 1/sqrt(var + eps) over the dims from `axis`, kept as size 1. */
export const onnxLayerNormStats = registerTraceable(
  'onnx.layerNormStats',
  (x: Tensor, axis: number, eps: number): Tensor[] => {
    const a = norm(axis, x.ndim);
    const axes = x.shape.slice(a).map((_, i) => a + i);
    const m = mean(x, axes, true);
    const centred = sub(x, m);
    const v = mean(mul(centred, centred), axes, true);
    const inv = reciprocal(sqrt(add(v, new Tensor({ data: Float32Array.of(eps), shape: [], dtype: 'float32' }))));
    return [m, inv];
  },
);

/** Dropout's mask in inference: all true, shaped like x. */
export const onnxOnesMask = registerTraceable(
  'onnx.onesMask',
  (x: Tensor): Tensor => new Tensor({ data: new Uint8Array(x.size).fill(1), shape: [...x.shape], dtype: 'bool' }),
);

/** Average pooling that divides by the in-bounds count only: pooled zero-padded x over pooled zero-padded ones. */
export const onnxAvgPoolExcludePad = registerTraceable(
  'onnx.avgPoolExcludePad',
  (x: Tensor, kernel: number[], strides: number[], pads: number[], ceilMode: boolean): Tensor => {
    const full = [0, 0, pads[0]!, pads[1]!, 0, 0, pads[2]!, pads[3]!];
    const ones = new Tensor({ data: new Float32Array(x.size).fill(1), shape: [...x.shape], dtype: 'float32' });
    const pool = (t: Tensor) => avgPool2d(onnxPad(t, full, 'constant', 0), kernel, { stride: strides, ceilMode });
    return div(pool(x), pool(ones));
  },
);

/**
 * AveragePool with dilations (opset 19), no ceil mode: x zero-padded by pads [top, left, bottom, right], each
 * output the sum of its dilated window divided by the window's size (countIncludePad) or by its taps inside x.
 */
export const onnxAvgPoolDilated = registerTraceable(
  'onnx.avgPoolDilated',
  (
    x: Tensor,
    kernel: number[],
    strides: number[],
    dilations: number[],
    pads: number[],
    countIncludePad: boolean,
  ): Tensor => {
    const full = [0, 0, pads[0]!, pads[1]!, 0, 0, pads[2]!, pads[3]!];
    const padded = onnxPad(x, full, 'constant', 0);
    const out = [2, 3].map((a, i) => windowOutSize(padded.shape[a]!, kernel[i]!, strides[i]!, 0, 0, dilations[i]!));
    if (out.some((n) => n < 1))
      throw new ShapeError(`onnx.avgPoolDilated: the dilated window does not fit input [${x.shape.join(', ')}]`);
    const windowSum = (t: Tensor): Tensor => {
      let acc: Tensor | null = null;
      for (let ky = 0; ky < kernel[0]!; ky++) {
        for (let kx = 0; kx < kernel[1]!; kx++) {
          const starts = [ky * dilations[0]!, kx * dilations[1]!];
          const ends = starts.map((s0, i) => s0 + (out[i]! - 1) * strides[i]! + 1);
          const tap = onnxSlice(t, starts, ends, [2, 3], strides);
          acc = acc ? add(acc, tap) : tap;
        }
      }
      return acc!;
    };
    const sums = windowSum(padded);
    if (countIncludePad) {
      const size = new Tensor({ data: Float32Array.of(kernel[0]! * kernel[1]!), shape: [], dtype: 'float32' });
      return div(sums, size);
    }
    const ones = new Tensor({ data: new Float32Array(x.size).fill(1), shape: [...x.shape], dtype: 'float32' });
    return div(sums, windowSum(onnxPad(ones, full, 'constant', 0)));
  },
);
