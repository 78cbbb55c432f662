import ndarray from 'ndarray';
import ops from 'ndarray-ops';
import { registerGradient } from '../autograd.js';
import { run1, runOp } from '../dispatch.js';
import { allocate, type TypedArray } from '../dtype.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import { contiguousStrides, normalizeAxis } from '../shape.js';
import { Tensor } from '../tensor.js';
import { axisLayout } from './axis-layout.js';
import { f32, make } from './util.js';
import { reshape } from './view.js';

const fmt = (s: readonly number[]) => `[${s.join(', ')}]`;

/**
 * Copies `len` consecutive axis positions between a row-major block laid out [outer, srcN, inner]
 * (from position `srcAt`) and one laid out [outer, dstN, inner] (to position `dstAt`).
 */
function copyAlongAxis(
  src: TypedArray,
  srcN: number,
  srcAt: number,
  dst: TypedArray,
  dstN: number,
  dstAt: number,
  len: number,
  outer: number,
  inner: number,
): void {
  const chunk = len * inner;
  if (chunk === 0) return;
  for (let o = 0; o < outer; o++) {
    const s = (o * srcN + srcAt) * inner;
    const d = (o * dstN + dstAt) * inner;
    if (chunk >= 64) dst.set(src.subarray(s, s + chunk), d);
    else for (let i = 0; i < chunk; i++) dst[d + i] = src[s + i]!;
  }
}

interface AxisAttrs {
  axis: number;
}

registerKernel<(i: Tensor[], a: AxisAttrs) => Tensor>({
  op: 'Concat',
  backend: 'cpu',
  fn: (inputs, { axis }) => {
    const first = inputs[0]!;
    const total = inputs.reduce((s, t) => s + t.shape[axis]!, 0);
    const shape = first.shape.map((d, i) => (i === axis ? total : d));
    const { outer, inner } = axisLayout(shape, axis);
    const out = allocate(first.dtype, outer * total * inner);
    let at = 0;
    for (const t of inputs) {
      const n = t.shape[axis]!;
      copyAlongAxis(t.values(), n, 0, out, total, at, n, outer, inner);
      at += n;
    }
    return make(out, shape, first.dtype);
  },
});

registerGradient<AxisAttrs>('Concat', ({ inputs, attrs: { axis } }, [g]) => {
  const gv = f32(g!);
  const total = g!.shape[axis]!;
  const { outer, inner } = axisLayout(g!.shape, axis);
  let at = 0;
  return inputs.map((t) => {
    const n = t.shape[axis]!;
    const start = at;
    at += n;
    if (!t.requiresGrad) return null;
    const part = new Float32Array(t.size);
    copyAlongAxis(gv, total, start, part, n, 0, n, outer, inner);
    return make(part, t.shape);
  });
});

/** Joins tensors along an existing axis; all other dimensions and the dtype must agree. */
export function cat(tensors: readonly Tensor[], axis = 0): Tensor {
  if (!tensors.length) throw new InvalidArgumentError('cat: needs at least one tensor');
  const first = tensors[0]!;
  if (first.ndim === 0) throw new ShapeError('cat: 0-d tensors cannot be concatenated; unsqueeze them to 1-d first');
  const a = normalizeAxis(axis, first.ndim, 'cat');
  tensors.forEach((t, k) => {
    if (t.dtype !== first.dtype) {
      throw new DTypeError(
        `cat: tensor ${k} is ${t.dtype} but tensor 0 is ${first.dtype}; convert with .toType() first`,
      );
    }
    if (t.ndim !== first.ndim || t.shape.some((d, i) => i !== a && d !== first.shape[i])) {
      throw new ShapeError(
        `cat: tensor ${k} has shape ${fmt(t.shape)}, which differs from tensor 0 ${fmt(first.shape)} outside axis ${a}`,
      );
    }
  });
  if (tensors.length === 1) return first;
  return run1<AxisAttrs>('Concat', [...tensors], { axis: a });
}

interface SplitAttrs {
  axis: number;
  sizes: number[];
}

function axisView(x: Tensor, axis: number, start: number, length: number, step = 1): Tensor {
  const shape = x.shape.map((d, i) => (i === axis ? length : d));
  const strides = x.strides.map((s, i) => (i === axis ? s * step : s));
  const offset = length > 0 ? x.offset + start * x.strides[axis]! : x.offset;
  return new Tensor({ data: x.data, shape, strides, offset, dtype: x.dtype });
}

registerKernel<(i: Tensor[], a: SplitAttrs) => Tensor[]>({
  op: 'Split',
  backend: 'cpu',
  fn: ([x], { axis, sizes }) => {
    let at = 0;
    return sizes.map((n) => {
      const v = axisView(x!, axis, at, n);
      at += n;
      return v;
    });
  },
});

registerGradient<SplitAttrs>('Split', ({ inputs: [x], attrs: { axis, sizes } }, grads) => {
  const dx = new Float32Array(x!.size);
  const total = x!.shape[axis]!;
  const { outer, inner } = axisLayout(x!.shape, axis);
  let at = 0;
  sizes.forEach((n, k) => {
    const g = grads[k];
    if (g) copyAlongAxis(f32(g), n, 0, dx, total, at, n, outer, inner);
    at += n;
  });
  return [make(dx, x!.shape)];
});

/**
 * Splits along `axis` into pieces of `sizesOrChunk` elements (the last may be smaller), or into
 * pieces of the listed sizes, which must add up to the axis length. The pieces are views.
 */
export function split(x: Tensor, sizesOrChunk: number | readonly number[], axis = 0): Tensor[] {
  if (x.ndim === 0) throw new ShapeError('split: cannot split a 0-d tensor');
  const a = normalizeAxis(axis, x.ndim, 'split');
  const total = x.shape[a]!;
  let sizes: number[];
  if (typeof sizesOrChunk === 'number') {
    if (!Number.isInteger(sizesOrChunk) || sizesOrChunk <= 0) {
      throw new InvalidArgumentError(`split: chunk size must be a positive integer, got ${sizesOrChunk}`);
    }
    sizes = [];
    for (let at = 0; at < total; at += sizesOrChunk) sizes.push(Math.min(sizesOrChunk, total - at));
    if (!sizes.length) sizes.push(0);
  } else {
    sizes = [...sizesOrChunk];
    if (sizes.some((s) => !Number.isInteger(s) || s < 0)) {
      throw new InvalidArgumentError(`split: sizes must be non-negative integers, got [${sizes.join(', ')}]`);
    }
    const s = sizes.reduce((p, q) => p + q, 0);
    if (s !== total) {
      throw new ShapeError(
        `split: sizes [${sizes.join(', ')}] add up to ${s}, but axis ${a} of ${fmt(x.shape)} has ${total}`,
      );
    }
  }
  return runOp<SplitAttrs>('Split', [x], { axis: a, sizes });
}

export interface SliceSpec {
  axis?: number;
  /** First index (negative counts from the end); defaults to the start for step > 0, the end for step < 0. */
  start?: number;
  /** One past the last index, exclusive, like Python. */
  end?: number;
  step?: number;
}

interface SliceAttrs {
  axis: number;
  start: number;
  length: number;
  step: number;
}

registerKernel<(i: Tensor[], a: SliceAttrs) => Tensor>({
  op: 'Slice',
  backend: 'cpu',
  fn: ([x], { axis, start, length, step }) => axisView(x!, axis, start, length, step),
});

registerGradient<SliceAttrs>('Slice', ({ inputs: [x], attrs: { axis, start, length, step } }, [g]) => {
  const dx = new Float32Array(x!.size);
  if (length > 0) {
    const strides = contiguousStrides(x!.shape);
    const shape = x!.shape.map((d, i) => (i === axis ? length : d));
    const target = ndarray(
      dx,
      shape,
      strides.map((s, i) => (i === axis ? s * step : s)),
      start * strides[axis]!,
    );
    ops.assign(target, g!.nd);
  }
  return [make(dx, x!.shape)];
});

/** Python's slice.indices: clamps start/end into range and returns the first index and the count. */
function resolveSlice(
  n: number,
  start: number | undefined,
  end: number | undefined,
  step: number,
): { start: number; length: number } {
  const clampIndex = (i: number, lo: number, hi: number) => {
    const k = i < 0 ? i + n : i;
    return k < lo ? lo : k > hi ? hi : k;
  };
  let s: number;
  let e: number;
  if (step > 0) {
    s = start === undefined ? 0 : clampIndex(start, 0, n);
    e = end === undefined ? n : clampIndex(end, 0, n);
    return { start: s, length: e > s ? Math.ceil((e - s) / step) : 0 };
  }
  s = start === undefined ? n - 1 : clampIndex(start, -1, n - 1);
  e = end === undefined ? -1 : clampIndex(end, -1, n - 1);
  return { start: s, length: s > e ? Math.ceil((s - e) / -step) : 0 };
}

/**
 * x[start:end:step] along one axis with Python's rules (negative indices count from the end,
 * out-of-range bounds clamp, a negative step walks backwards). Returns a view.
 */
export function slice(x: Tensor, spec: SliceSpec): Tensor {
  if (x.ndim === 0) throw new ShapeError('slice: cannot slice a 0-d tensor');
  const axis = normalizeAxis(spec.axis ?? 0, x.ndim, 'slice');
  const step = spec.step ?? 1;
  for (const [k, v] of [
    ['start', spec.start],
    ['end', spec.end],
    ['step', step],
  ] as const) {
    if (v !== undefined && !Number.isInteger(v))
      throw new InvalidArgumentError(`slice: ${k} must be an integer, got ${v}`);
  }
  if (step === 0) throw new InvalidArgumentError('slice: step cannot be 0');
  const { start, length } = resolveSlice(x.shape[axis]!, spec.start, spec.end, step);
  return run1<SliceAttrs>('Slice', [x], { axis, start, length, step });
}

/** Merges dimensions startDim..endDim (inclusive) into one; a 0-d tensor becomes [1]. */
export function flatten(x: Tensor, startDim = 0, endDim = -1): Tensor {
  if (x.ndim === 0) return reshape(x, [1]);
  const s = normalizeAxis(startDim, x.ndim, 'flatten');
  const e = normalizeAxis(endDim, x.ndim, 'flatten');
  if (s > e)
    throw new InvalidArgumentError(`flatten: startDim ${startDim} comes after endDim ${endDim} for rank ${x.ndim}`);
  if (s === e) return x;
  let merged = 1;
  for (let i = s; i <= e; i++) merged *= x.shape[i]!;
  return reshape(x, [...x.shape.slice(0, s), merged, ...x.shape.slice(e + 1)]);
}

interface SqueezeAttrs {
  axes: number[];
}

registerKernel<(i: Tensor[], a: SqueezeAttrs) => Tensor>({
  op: 'Squeeze',
  backend: 'cpu',
  fn: ([x], { axes }) =>
    new Tensor({
      data: x!.data,
      shape: x!.shape.filter((_, i) => !axes.includes(i)),
      strides: x!.strides.filter((_, i) => !axes.includes(i)),
      offset: x!.offset,
      dtype: x!.dtype,
    }),
});
registerGradient('Squeeze', ({ inputs: [x] }, [g]) => [reshape(g!, x!.shape)]);

/**
 * Removes size-1 dimensions: all of them, or only those in `axis`; a listed axis whose size is
 * not 1 is left alone, as in PyTorch. A view.
 */
export function squeeze(x: Tensor, axis?: number | readonly number[]): Tensor {
  let axes: number[];
  if (axis === undefined) {
    axes = x.shape.flatMap((d, i) => (d === 1 ? [i] : []));
  } else {
    const list = typeof axis === 'number' ? [axis] : [...axis];
    axes = list.map((a) => normalizeAxis(a, x.ndim, 'squeeze')).filter((a) => x.ndim > 0 && x.shape[a] === 1);
  }
  if (!axes.length) return x;
  return run1<SqueezeAttrs>('Squeeze', [x], { axes: [...new Set(axes)] });
}

registerKernel<(i: Tensor[], a: AxisAttrs) => Tensor>({
  op: 'Unsqueeze',
  backend: 'cpu',
  fn: ([x], { axis }) => {
    const shape = [...x!.shape];
    const strides = [...x!.strides];
    // Any stride is valid for a size-1 dimension; this one keeps a contiguous input contiguous.
    const stride = axis < x!.ndim ? x!.strides[axis]! * x!.shape[axis]! : 1;
    shape.splice(axis, 0, 1);
    strides.splice(axis, 0, stride);
    return new Tensor({ data: x!.data, shape, strides, offset: x!.offset, dtype: x!.dtype });
  },
});
registerGradient('Unsqueeze', ({ inputs: [x] }, [g]) => [reshape(g!, x!.shape)]);

/** Inserts a size-1 dimension at `axis` (−1 appends), a view. */
export function unsqueeze(x: Tensor, axis: number): Tensor {
  const a = normalizeAxis(axis, x.ndim + 1, 'unsqueeze');
  return run1<AxisAttrs>('Unsqueeze', [x], { axis: a });
}

declare module '../tensor.js' {
  interface Tensor {
    split(sizesOrChunk: number | readonly number[], axis?: number): Tensor[];
    slice(spec: SliceSpec): Tensor;
    flatten(startDim?: number, endDim?: number): Tensor;
    squeeze(axis?: number | readonly number[]): Tensor;
    unsqueeze(axis: number): Tensor;
  }
}

const P = Tensor.prototype;
P.split = function (sizesOrChunk, axis) {
  return split(this, sizesOrChunk, axis);
};
P.slice = function (spec) {
  return slice(this, spec);
};
P.flatten = function (startDim, endDim) {
  return flatten(this, startDim, endDim);
};
P.squeeze = function (axis) {
  return squeeze(this, axis);
};
P.unsqueeze = function (axis) {
  return unsqueeze(this, axis);
};
