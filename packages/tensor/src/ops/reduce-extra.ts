import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { allocate, type TypedArray } from '../dtype.js';
import { InvalidArgumentError } from '../errors.js';
import { registerKernel } from '../registry.js';
import { normalizeAxis } from '../shape.js';
import { Tensor } from '../tensor.js';
import { axisLayout, type AxisLayout } from './axis-layout.js';
import { f32, make } from './util.js';

interface ArgReduceAttrs {
  /** null reduces over every element (the flat index is reported). */
  axis: number | null;
  keepdim: boolean;
}

/**
 * For every (outer, inner) cell, the position along the axis of the largest (or smallest)
 * value; the first one wins ties and NaN counts as the extreme, as in PyTorch.
 */
function argExtreme(v: TypedArray, { outer, n, inner }: AxisLayout, isMax: boolean): Int32Array {
  const idx = new Int32Array(outer * inner);
  if (inner === 1) {
    for (let o = 0, base = 0; o < outer; o++, base += n) {
      let best = v[base]!;
      let at = 0;
      if (!Number.isNaN(best)) {
        for (let k = 1; k < n; k++) {
          const t = v[base + k]!;
          if (isMax ? t > best : t < best) {
            best = t;
            at = k;
          } else if (Number.isNaN(t)) {
            at = k;
            break;
          }
        }
      }
      idx[o] = at;
    }
    return idx;
  }
  const best = new Float64Array(inner);
  for (let o = 0; o < outer; o++) {
    const base = o * n * inner;
    const cell = o * inner;
    for (let j = 0; j < inner; j++) best[j] = v[base + j]!;
    for (let k = 1; k < n; k++) {
      const row = base + k * inner;
      for (let j = 0; j < inner; j++) {
        const t = v[row + j]!;
        const b = best[j]!;
        if ((isMax ? t > b : t < b) || (Number.isNaN(t) && !Number.isNaN(b))) {
          best[j] = t;
          idx[cell + j] = k;
        }
      }
    }
  }
  return idx;
}

function layoutOf(x: Tensor, axis: number | null): AxisLayout {
  return axis === null ? { outer: 1, n: x.size, inner: 1 } : axisLayout(x.shape, axis);
}

function outShape(x: Tensor, { axis, keepdim }: ArgReduceAttrs): number[] {
  if (axis === null) return keepdim ? x.shape.map(() => 1) : [];
  return keepdim ? x.shape.map((d, i) => (i === axis ? 1 : d)) : x.shape.filter((_, i) => i !== axis);
}

for (const [op, isMax] of [
  ['ReduceMax', true],
  ['ReduceMin', false],
] as const) {
  registerKernel<(i: Tensor[], a: ArgReduceAttrs, saved: Record<string, unknown>) => Tensor>({
    op,
    backend: 'cpu',
    fn: ([x], attrs, saved) => {
      const v = x!.values();
      const layout = layoutOf(x!, attrs.axis);
      const idx = argExtreme(v, layout, isMax);
      const out = allocate(x!.dtype, idx.length);
      const { n, inner } = layout;
      for (let c = 0; c < idx.length; c++) {
        const o = (c / inner) | 0;
        out[c] = v[(o * n + idx[c]!) * inner + (c - o * inner)]!;
      }
      saved.index = idx;
      return make(out, outShape(x!, attrs), x!.dtype);
    },
  });
  registerGradient<ArgReduceAttrs>(op, ({ inputs: [x], attrs, saved }, [g]) => {
    const idx = saved.index as Int32Array;
    const gv = f32(g!);
    const { n, inner } = layoutOf(x!, attrs.axis);
    const dx = new Float32Array(x!.size);
    for (let c = 0; c < idx.length; c++) {
      const o = (c / inner) | 0;
      dx[(o * n + idx[c]!) * inner + (c - o * inner)] = gv[c]!;
    }
    return [make(dx, x!.shape)];
  });
}

for (const [op, isMax] of [
  ['ArgMax', true],
  ['ArgMin', false],
] as const) {
  registerKernel<(i: Tensor[], a: ArgReduceAttrs) => Tensor>({
    op,
    backend: 'cpu',
    fn: ([x], attrs) => make(argExtreme(x!.values(), layoutOf(x!, attrs.axis), isMax), outShape(x!, attrs), 'int32'),
  });
}

function attrsFor(x: Tensor, axis: number | undefined | null, keepdim: boolean, name: string): ArgReduceAttrs {
  if (axis === undefined || axis === null) {
    if (x.size === 0)
      throw new InvalidArgumentError(
        `${name}: the input is empty (shape [${x.shape.join(', ')}]); there is no extreme to take`,
      );
    return { axis: null, keepdim };
  }
  if (typeof axis !== 'number')
    throw new InvalidArgumentError(`${name}: axis must be a single number, got ${String(axis)}`);
  const a = normalizeAxis(axis, Math.max(x.ndim, 1), name);
  if (x.ndim > 0 && x.shape[a] === 0) {
    throw new InvalidArgumentError(
      `${name}: cannot reduce axis ${axis}, which has size 0 (input [${x.shape.join(', ')}])`,
    );
  }
  return { axis: x.ndim === 0 ? null : a, keepdim };
}

/**
 * Largest value along `axis` (every element when omitted). The gradient goes to the position
 * argmax reports (the first maximum), not spread over ties.
 */
export function max(x: Tensor, axis?: number | null, keepdim = false): Tensor {
  return run1<ArgReduceAttrs>('ReduceMax', [x], attrsFor(x, axis, keepdim, 'max'));
}

/** Smallest value along `axis` (every element when omitted); gradient to the argmin position. */
export function min(x: Tensor, axis?: number | null, keepdim = false): Tensor {
  return run1<ArgReduceAttrs>('ReduceMin', [x], attrsFor(x, axis, keepdim, 'min'));
}

/** int32 index of the first maximum along `axis`; without an axis, the flat row-major index. */
export function argmax(x: Tensor, axis?: number | null, keepdim = false): Tensor {
  return run1<ArgReduceAttrs>('ArgMax', [x], attrsFor(x, axis, keepdim, 'argmax'));
}

/** int32 index of the first minimum along `axis`; without an axis, the flat row-major index. */
export function argmin(x: Tensor, axis?: number | null, keepdim = false): Tensor {
  return run1<ArgReduceAttrs>('ArgMin', [x], attrsFor(x, axis, keepdim, 'argmin'));
}

declare module '../tensor.js' {
  interface Tensor {
    max(axis?: number | null, keepdim?: boolean): Tensor;
    min(axis?: number | null, keepdim?: boolean): Tensor;
    argmax(axis?: number | null, keepdim?: boolean): Tensor;
    argmin(axis?: number | null, keepdim?: boolean): Tensor;
  }
}

const P = Tensor.prototype;
P.max = function (axis, keepdim) {
  return max(this, axis, keepdim);
};
P.min = function (axis, keepdim) {
  return min(this, axis, keepdim);
};
P.argmax = function (axis, keepdim) {
  return argmax(this, axis, keepdim);
};
P.argmin = function (axis, keepdim) {
  return argmin(this, axis, keepdim);
};
