import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { allocate, type TypedArray } from '../dtype.js';
import { DTypeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import { broadcastShapes, broadcastStrides, sizeOf } from '../shape.js';
import { Tensor } from '../tensor.js';
import { sumToShape, scalarLike } from './reduce.js';
import { f32, make, promote } from './util.js';
import { expand } from './view.js';

registerKernel<(i: Tensor[]) => Tensor>({
  op: 'Where',
  backend: 'cpu',
  fn: ([c, a, b]) => {
    const shape = broadcastShapes(c!.shape, a!.shape, b!.shape);
    const dtype = promote(a!.dtype, b!.dtype);
    const n = sizeOf(shape);
    const out = allocate(dtype, n);
    if (c!.size === n && a!.size === n && b!.size === n) {
      const cv = c!.values();
      const av = a!.values();
      const bv = b!.values();
      for (let i = 0; i < n; i++) out[i] = cv[i] ? av[i]! : bv[i]!;
    } else {
      select(c!, a!, b!, shape, out);
    }
    return make(out, shape, dtype);
  },
});

/** The general case: walks the three operands through broadcast strides. */
function select(c: Tensor, a: Tensor, b: Tensor, shape: number[], out: TypedArray): void {
  const n = out.length;
  if (n === 0) return;
  const nd = shape.length;
  const sc = broadcastStrides(c.shape, c.strides, shape);
  const sa = broadcastStrides(a.shape, a.strides, shape);
  const sb = broadcastStrides(b.shape, b.strides, shape);
  const cd = c.data;
  const ad = a.data;
  const bd = b.data;
  const last = nd - 1;
  const inner = nd ? shape[last]! : 1;
  const ic = nd ? sc[last]! : 0;
  const ia = nd ? sa[last]! : 0;
  const ib = nd ? sb[last]! : 0;
  const idx = new Array<number>(nd).fill(0);
  let pc = c.offset;
  let pa = a.offset;
  let pb = b.offset;
  for (let o = 0; o < n; o += inner) {
    for (let j = 0, qc = pc, qa = pa, qb = pb; j < inner; j++, qc += ic, qa += ia, qb += ib) {
      out[o + j] = cd[qc] ? ad[qa]! : bd[qb]!;
    }
    for (let d = last - 1; d >= 0; d--) {
      idx[d]!++;
      pc += sc[d]!;
      pa += sa[d]!;
      pb += sb[d]!;
      if (idx[d]! < shape[d]!) break;
      pc -= sc[d]! * shape[d]!;
      pa -= sa[d]! * shape[d]!;
      pb -= sb[d]! * shape[d]!;
      idx[d] = 0;
    }
  }
}

registerGradient('Where', ({ inputs: [c, a, b] }, [g]) => {
  const gv = f32(g!);
  const cv = expand(c!, g!.shape).values();
  const n = gv.length;
  let ga: Tensor | null = null;
  let gb: Tensor | null = null;
  if (a!.requiresGrad) {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) if (cv[i]) out[i] = gv[i]!;
    ga = sumToShape(make(out, g!.shape), a!.shape);
  }
  if (b!.requiresGrad) {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) if (!cv[i]) out[i] = gv[i]!;
    gb = sumToShape(make(out, g!.shape), b!.shape);
  }
  return [null, ga, gb];
});

/**
 * Elementwise choice: `a` where `cond` is true, `b` elsewhere, with NumPy broadcasting of all
 * three. `cond` must be bool (comparisons such as `x.gt(0)` produce one).
 */
export function where(cond: Tensor, a: Tensor | number, b: Tensor | number): Tensor {
  if (!(cond instanceof Tensor)) throw new TypeError('where: cond must be a bool Tensor');
  if (cond.dtype !== 'bool') {
    throw new DTypeError(
      `where: cond must be bool, got ${cond.dtype}; build it with a comparison such as x.gt(0) or .toType('bool')`,
    );
  }
  const ta = a instanceof Tensor ? a : b instanceof Tensor ? scalarLike(a, b) : make(Float32Array.of(a), []);
  const tb = b instanceof Tensor ? b : scalarLike(b, ta);
  return run1('Where', [cond, ta, tb], {});
}

declare module '../tensor.js' {
  interface Tensor {
    /** `where(cond, this, other)`, as torch's Tensor.where. */
    where(cond: Tensor, other: Tensor | number): Tensor;
  }
}

Tensor.prototype.where = function (cond, other) {
  return where(cond, this, other);
};
