import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { allocate, type DType, type TypedArray } from '../dtype.js';
import { registerKernel, type TensorKernel } from '../registry.js';
import { broadcastShapes, broadcastStrides, shapesEqual, sizeOf } from '../shape.js';
import { Tensor } from '../tensor.js';
import { scalarLike, sumToShape } from './reduce.js';
import { make, promote } from './util.js';

type Scalarish = Tensor | number;

/**
 * Applies `f` elementwise with NumPy broadcasting. Contiguous equal shapes and scalar operands
 * take flat loops; everything else walks both inputs through broadcast strides.
 */
export function broadcastBinary(a: Tensor, b: Tensor, outDtype: DType, f: (x: number, y: number) => number): Tensor {
  const shape = shapesEqual(a.shape, b.shape) ? [...a.shape] : broadcastShapes(a.shape, b.shape);
  const n = sizeOf(shape);
  const out = allocate(outDtype, n);
  if (a.isContiguous() && b.isContiguous()) {
    const av = a.values();
    const bv = b.values();
    if (av.length === n && bv.length === n) {
      for (let i = 0; i < n; i++) out[i] = f(av[i]!, bv[i]!);
      return make(out, shape, outDtype);
    }
    if (bv.length === 1 && av.length === n) {
      const y = bv[0]!;
      for (let i = 0; i < n; i++) out[i] = f(av[i]!, y);
      return make(out, shape, outDtype);
    }
    if (av.length === 1 && bv.length === n) {
      const x = av[0]!;
      for (let i = 0; i < n; i++) out[i] = f(x, bv[i]!);
      return make(out, shape, outDtype);
    }
  }
  walk(a, b, shape, out, f);
  return make(out, shape, outDtype);
}

/**
 * Visits the output in rows of its last dim, through broadcast strides: `visit(pa, sa, pb, sb, o, n)` gets the
 * row's first element in a's and b's data, their strides along it, its first output index and its length.
 */
function forEachRow(
  a: Tensor,
  b: Tensor,
  shape: readonly number[],
  visit: (pa: number, ia: number, pb: number, ib: number, o: number, inner: number) => void,
): void {
  const n = sizeOf(shape);
  if (n === 0) return;
  const nd = shape.length;
  const sa = broadcastStrides(a.shape, a.strides, shape);
  const sb = broadcastStrides(b.shape, b.strides, shape);
  const idx = new Array<number>(nd).fill(0);
  const last = nd - 1;
  const inner = nd ? shape[last]! : 1;
  const ia = nd ? sa[last]! : 0;
  const ib = nd ? sb[last]! : 0;
  let pa = a.offset;
  let pb = b.offset;
  for (let o = 0; o < n; o += inner) {
    visit(pa, ia, pb, ib, o, inner);
    for (let d = last - 1; d >= 0; d--) {
      idx[d]!++;
      pa += sa[d]!;
      pb += sb[d]!;
      if (idx[d]! < shape[d]!) break;
      pa -= sa[d]! * shape[d]!;
      pb -= sb[d]! * shape[d]!;
      idx[d] = 0;
    }
  }
}

function walk(a: Tensor, b: Tensor, shape: number[], out: TypedArray, f: (x: number, y: number) => number): void {
  const ad = a.data;
  const bd = b.data;
  forEachRow(a, b, shape, (pa, ia, pb, ib, o, inner) => {
    for (let j = 0; j < inner; j++, pa += ia, pb += ib) out[o + j] = f(ad[pa]!, bd[pb]!);
  });
}

type SameShapeLoop = (a: Float32Array, b: Float32Array, out: Float32Array) => void;

/** Monomorphic loops for the float32 same-shape case, which residual adds and gradients hit every step. */
const SAME_SHAPE: Record<string, SameShapeLoop> = {
  add: (a, b, o) => {
    for (let i = 0; i < o.length; i++) o[i] = a[i]! + b[i]!;
  },
  sub: (a, b, o) => {
    for (let i = 0; i < o.length; i++) o[i] = a[i]! - b[i]!;
  },
  mul: (a, b, o) => {
    for (let i = 0; i < o.length; i++) o[i] = a[i]! * b[i]!;
  },
  div: (a, b, o) => {
    for (let i = 0; i < o.length; i++) o[i] = a[i]! / b[i]!;
  },
};

/**
 * One output row of a broadcast float32 op: n elements of a from `pa` by `sa` and of b from `pb` by `sb` (a stride
 * of 0 repeats the element). One loop per op, so each stays monomorphic; walking through a callback per element was
 * about 20 times slower on a [32, 197, 192] by [32, 197, 1] layer-norm step.
 */
type RowLoop = (
  a: Float32Array,
  pa: number,
  sa: number,
  b: Float32Array,
  pb: number,
  sb: number,
  out: Float32Array,
  o: number,
  n: number,
) => void;

const ROW: Record<'add' | 'sub' | 'mul' | 'div', RowLoop> = {
  add: (a, pa, sa, b, pb, sb, out, o, n) => {
    for (let j = 0; j < n; j++, pa += sa, pb += sb) out[o + j] = a[pa]! + b[pb]!;
  },
  sub: (a, pa, sa, b, pb, sb, out, o, n) => {
    for (let j = 0; j < n; j++, pa += sa, pb += sb) out[o + j] = a[pa]! - b[pb]!;
  },
  mul: (a, pa, sa, b, pb, sb, out, o, n) => {
    for (let j = 0; j < n; j++, pa += sa, pb += sb) out[o + j] = a[pa]! * b[pb]!;
  },
  div: (a, pa, sa, b, pb, sb, out, o, n) => {
    for (let j = 0; j < n; j++, pa += sa, pb += sb) out[o + j] = a[pa]! / b[pb]!;
  },
};

/** A broadcast float32 op row by row through broadcast strides (walk's order, ROW's loops). */
function walkRows(a: Tensor, b: Tensor, row: RowLoop): Tensor {
  const shape = broadcastShapes(a.shape, b.shape);
  const out = new Float32Array(sizeOf(shape));
  const ad = a.data as Float32Array;
  const bd = b.data as Float32Array;
  forEachRow(a, b, shape, (pa, ia, pb, ib, o, inner) => row(ad, pa, ia, bd, pb, ib, out, o, inner));
  return make(out, shape);
}

function arith(f: (x: number, y: number) => number, fast?: SameShapeLoop, row?: RowLoop): TensorKernel {
  return ([a, b]) => {
    const dt = promote(a!.dtype, b!.dtype);
    const floats = a!.dtype === 'float32' && b!.dtype === 'float32';
    if (fast && floats && shapesEqual(a!.shape, b!.shape) && a!.isContiguous() && b!.isContiguous()) {
      const out = new Float32Array(a!.size);
      fast(a!.values() as Float32Array, b!.values() as Float32Array, out);
      return make(out, a!.shape);
    }
    if (row && floats) return walkRows(a!, b!, row);
    if (dt === 'float32') return broadcastBinary(a!, b!, dt, f);
    return broadcastBinary(a!, b!, dt, (x, y) => Math.trunc(f(x, y)));
  };
}

function compare(f: (x: number, y: number) => boolean): TensorKernel {
  return ([a, b]) => broadcastBinary(a!, b!, 'bool', (x, y) => (f(x, y) ? 1 : 0));
}

registerKernel({ op: 'Add', backend: 'cpu', fn: arith((x, y) => x + y, SAME_SHAPE.add, ROW.add) });
registerKernel({ op: 'Sub', backend: 'cpu', fn: arith((x, y) => x - y, SAME_SHAPE.sub, ROW.sub) });
registerKernel({ op: 'Mul', backend: 'cpu', fn: arith((x, y) => x * y, SAME_SHAPE.mul, ROW.mul) });
registerKernel({ op: 'Div', backend: 'cpu', fn: arith((x, y) => x / y, SAME_SHAPE.div, ROW.div) });
registerKernel({ op: 'Pow', backend: 'cpu', fn: arith((x, y) => x ** y) });
registerKernel({ op: 'Max', backend: 'cpu', fn: arith((x, y) => (x >= y ? x : y)) });
registerKernel({ op: 'Min', backend: 'cpu', fn: arith((x, y) => (x <= y ? x : y)) });
registerKernel({ op: 'Equal', backend: 'cpu', fn: compare((x, y) => x === y) });
registerKernel({ op: 'NotEqual', backend: 'cpu', fn: compare((x, y) => x !== y) });
registerKernel({ op: 'Less', backend: 'cpu', fn: compare((x, y) => x < y) });
registerKernel({ op: 'LessOrEqual', backend: 'cpu', fn: compare((x, y) => x <= y) });
registerKernel({ op: 'Greater', backend: 'cpu', fn: compare((x, y) => x > y) });
registerKernel({ op: 'GreaterOrEqual', backend: 'cpu', fn: compare((x, y) => x >= y) });

function asTensor(v: Scalarish, like: Tensor): Tensor {
  return v instanceof Tensor ? v : scalarLike(v, like);
}

export const add = (a: Scalarish, b: Scalarish): Tensor => binary('Add', a, b);
export const sub = (a: Scalarish, b: Scalarish): Tensor => binary('Sub', a, b);
export const mul = (a: Scalarish, b: Scalarish): Tensor => binary('Mul', a, b);
export const div = (a: Scalarish, b: Scalarish): Tensor => binary('Div', a, b);
export const pow = (a: Scalarish, b: Scalarish): Tensor => binary('Pow', a, b);
/** Elementwise maximum of two tensors (gradient goes to the larger; ties to the first). */
export const maximum = (a: Scalarish, b: Scalarish): Tensor => binary('Max', a, b);
export const minimum = (a: Scalarish, b: Scalarish): Tensor => binary('Min', a, b);
export const eq = (a: Scalarish, b: Scalarish): Tensor => binary('Equal', a, b);
export const ne = (a: Scalarish, b: Scalarish): Tensor => binary('NotEqual', a, b);
export const lt = (a: Scalarish, b: Scalarish): Tensor => binary('Less', a, b);
export const le = (a: Scalarish, b: Scalarish): Tensor => binary('LessOrEqual', a, b);
export const gt = (a: Scalarish, b: Scalarish): Tensor => binary('Greater', a, b);
export const ge = (a: Scalarish, b: Scalarish): Tensor => binary('GreaterOrEqual', a, b);

function binary(op: string, a: Scalarish, b: Scalarish): Tensor {
  if (!(a instanceof Tensor) && !(b instanceof Tensor))
    throw new TypeError(`${op}: at least one operand must be a Tensor`);
  const ta = asTensor(a, b as Tensor);
  const tb = asTensor(b, ta);
  return run1(op, [ta, tb], {});
}

registerGradient('Add', ({ inputs: [a, b] }, [g]) => [sumToShape(g!, a!.shape), sumToShape(g!, b!.shape)]);
registerGradient('Sub', ({ inputs: [a, b] }, [g]) => [
  sumToShape(g!, a!.shape),
  sumToShape(run1('Neg', [g!], {}), b!.shape),
]);
registerGradient('Mul', ({ inputs: [a, b] }, [g]) => [
  a!.requiresGrad ? sumToShape(mul(g!, b!), a!.shape) : null,
  b!.requiresGrad ? sumToShape(mul(g!, a!), b!.shape) : null,
]);
registerGradient('Div', ({ inputs: [a, b] }, [g]) => [
  a!.requiresGrad ? sumToShape(div(g!, b!), a!.shape) : null,
  b!.requiresGrad ? sumToShape(div(mul(g!, a!), mul(b!, b!)).neg(), b!.shape) : null,
]);
registerGradient('Pow', ({ inputs: [a, b], outputs: [y] }, [g]) => [
  a!.requiresGrad ? sumToShape(mul(g!, mul(b!, pow(a!, sub(b!, 1)))), a!.shape) : null,
  b!.requiresGrad ? sumToShape(mul(g!, mul(y!, a!.log())), b!.shape) : null,
]);
registerGradient('Max', ({ inputs: [a, b] }, [g]) => {
  const mask = ge(a!, b!).toType('float32');
  return [sumToShape(mul(g!, mask), a!.shape), sumToShape(mul(g!, sub(1, mask)), b!.shape)];
});
registerGradient('Min', ({ inputs: [a, b] }, [g]) => {
  const mask = le(a!, b!).toType('float32');
  return [sumToShape(mul(g!, mask), a!.shape), sumToShape(mul(g!, sub(1, mask)), b!.shape)];
});
