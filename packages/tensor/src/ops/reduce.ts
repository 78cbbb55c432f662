import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { allocate } from '../dtype.js';
import { registerKernel } from '../registry.js';
import { contiguousStrides, normalizeAxes, shapesEqual, sizeOf, type Shape } from '../shape.js';
import { Tensor } from '../tensor.js';
import { expand, reshape } from './view.js';
import { make } from './util.js';

export interface ReduceAttrs {
  axes: number[];
  keepdim: boolean;
}

/** Output shape of a reduction, with and without the reduced dims kept as 1. */
export function reducedShape(shape: Shape, axes: readonly number[], keepdim: boolean): number[] {
  const kept = shape.map((d, i) => (axes.includes(i) ? 1 : d));
  return keepdim ? kept : shape.filter((_, i) => !axes.includes(i));
}

/**
 * Visits every input element with the flat index of the output cell it reduces into.
 * Input is read in row-major order.
 */
export function forEachReduced(
  shape: Shape,
  axes: readonly number[],
  visit: (inIndex: number, outIndex: number) => void,
): void {
  const nd = shape.length;
  const keptShape = shape.map((d, i) => (axes.includes(i) ? 1 : d));
  const outStrides = contiguousStrides(keptShape).map((s, i) => (axes.includes(i) ? 0 : s));
  const n = sizeOf(shape);
  const idx = new Array<number>(nd).fill(0);
  let o = 0;
  for (let i = 0; i < n; i++) {
    visit(i, o);
    for (let d = nd - 1; d >= 0; d--) {
      idx[d]!++;
      o += outStrides[d]!;
      if (idx[d]! < shape[d]!) break;
      o -= outStrides[d]! * shape[d]!;
      idx[d] = 0;
    }
  }
}

registerKernel<(inputs: Tensor[], attrs: ReduceAttrs) => Tensor>({
  op: 'ReduceSum',
  backend: 'cpu',
  fn: ([x], { axes, keepdim }) => {
    const outShape = reducedShape(x!.shape, axes, keepdim);
    const dtype = x!.dtype === 'float32' ? 'float32' : 'int32';
    const acc = new Float64Array(sizeOf(outShape));
    const v = x!.values();
    if (axes.length === x!.ndim) {
      let s = 0;
      for (let i = 0; i < v.length; i++) s += v[i]!;
      acc[0] = s;
    } else if (axes.length === 1 && axes[0] === x!.ndim - 1) {
      const inner = x!.shape[x!.ndim - 1]!;
      for (let o = 0, p = 0; o < acc.length; o++) {
        let s = 0;
        for (let j = 0; j < inner; j++) s += v[p++]!;
        acc[o] = s;
      }
    } else {
      forEachReduced(x!.shape, axes, (i, o) => {
        acc[o]! += v[i]!;
      });
    }
    const out = allocate(dtype, acc.length);
    for (let i = 0; i < acc.length; i++) out[i] = acc[i]!;
    return make(out, outShape, dtype);
  },
});

registerGradient<ReduceAttrs>('ReduceSum', ({ inputs: [x], attrs }, [g]) => {
  const kept = reducedShape(x!.shape, attrs.axes, true);
  return [expand(reshape(g!, kept), x!.shape)];
});

/** Sum over `axes` (all by default). */
export function sum(x: Tensor, axes?: number | readonly number[], keepdim = false): Tensor {
  return run1<ReduceAttrs>('ReduceSum', [x], { axes: normalizeAxes(axes, x.ndim, 'sum'), keepdim });
}

/** Mean over `axes` (all by default). */
export function mean(x: Tensor, axes?: number | readonly number[], keepdim = false): Tensor {
  const ax = normalizeAxes(axes, x.ndim, 'mean');
  let count = 1;
  for (const a of ax) count *= x.shape[a]!;
  return sum(x, ax, keepdim).mul(1 / count);
}

/** Reduces a broadcast gradient back to the shape of the operand it flowed from. */
export function sumToShape(g: Tensor, shape: Shape): Tensor {
  if (shapesEqual(g.shape, shape)) return g;
  const lead = g.ndim - shape.length;
  const axes: number[] = [];
  for (let i = 0; i < g.ndim; i++) {
    if (i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1)) axes.push(i);
  }
  const s = axes.length ? sum(g, axes, true) : g;
  return reshape(s, shape);
}

/** A 0-d tensor holding `value` in the dtype of `like` (float32 when `value` is fractional). */
export function scalarLike(value: number, like: Tensor): Tensor {
  const dtype = like.dtype === 'float32' || !Number.isInteger(value) ? 'float32' : like.dtype;
  const data = allocate(dtype, 1);
  data[0] = value;
  return new Tensor({ data, shape: [], dtype });
}
