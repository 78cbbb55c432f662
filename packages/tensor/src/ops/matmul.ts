import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { ShapeError } from '../errors.js';
import { gemm, gemmArgs, gemmBatch } from '../gemm/gemm.js';
import { registerKernel } from '../registry.js';
import { broadcastShapes, sizeOf } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { sumToShape, sum } from './reduce.js';
import { expand, reshape, transpose } from './view.js';
import { f32, make, requireFloat } from './util.js';

registerKernel<(i: Tensor[]) => Tensor>({
  op: 'MatMul',
  backend: 'cpu',
  fn: ([a, b]) => {
    const m = a!.shape[a!.ndim - 2]!;
    const k = a!.shape[a!.ndim - 1]!;
    const n = b!.shape[b!.ndim - 1]!;
    const batch = broadcastShapes(a!.shape.slice(0, -2), b!.shape.slice(0, -2));
    const av = f32(expand(a!, [...batch, m, k]));
    const bv = f32(expand(b!, [...batch, k, n]));
    const nb = sizeOf(batch);
    const out = new Float32Array(nb * m * n);
    gemmBatch(nb, gemmArgs(false, false, m, n, k, av, bv, out), { a: m * k, b: k * n, c: m * n });
    return make(out, [...batch, m, n]);
  },
});

registerGradient('MatMul', ({ inputs: [a, b] }, [g]) => [
  a!.requiresGrad ? sumToShape(matmul(g!, transpose(b!)), a!.shape) : null,
  b!.requiresGrad ? sumToShape(matmul(transpose(a!), g!), b!.shape) : null,
]);

/** Matrix product with NumPy semantics: 1-d operands are promoted and the added dim removed; batch dims broadcast. */
export function matmul(a: Tensor, b: Tensor): Tensor {
  requireFloat(a, 'matmul', 'first operand');
  requireFloat(b, 'matmul', 'second operand');
  if (a.ndim === 0 || b.ndim === 0)
    throw new ShapeError('matmul: operands must have at least one dimension; use mul for scalars');
  const a2 = a.ndim === 1 ? reshape(a, [1, a.shape[0]!]) : a;
  const b2 = b.ndim === 1 ? reshape(b, [b.shape[0]!, 1]) : b;
  if (a2.shape[a2.ndim - 1] !== b2.shape[b2.ndim - 2]) {
    throw new ShapeError(
      `matmul: inner dimensions differ: [${a.shape.join(', ')}] @ [${b.shape.join(', ')}] (${a2.shape[a2.ndim - 1]} vs ${b2.shape[b2.ndim - 2]})`,
    );
  }
  let y = run1('MatMul', [a2, b2], {});
  if (a.ndim === 1) y = reshape(y, [...y.shape.slice(0, -2), y.shape[y.ndim - 1]!]);
  if (b.ndim === 1) y = reshape(y, y.shape.slice(0, -1));
  return y;
}

registerKernel<(i: Tensor[]) => Tensor>({
  op: 'Linear',
  backend: 'cpu',
  fn: ([x, w, bias]) => {
    const inF = w!.shape[1]!;
    const outF = w!.shape[0]!;
    const rows = x!.size / inF;
    const out = new Float32Array(rows * outF);
    if (bias) {
      const bv = f32(bias);
      for (let r = 0; r < rows; r++) out.set(bv, r * outF);
    }
    gemm(gemmArgs(false, true, rows, outF, inF, f32(x!), f32(w!), out, bias ? 1 : 0));
    return make(out, [...x!.shape.slice(0, -1), outF]);
  },
});

registerGradient('Linear', ({ inputs: [x, w, bias] }, [g]) => {
  const inF = w!.shape[1]!;
  const outF = w!.shape[0]!;
  const rows = x!.size / inF;
  const gv = f32(g!);
  let gx: Tensor | null = null;
  let gw: Tensor | null = null;
  if (x!.requiresGrad) {
    const out = new Float32Array(rows * inF);
    gemm(gemmArgs(false, false, rows, inF, outF, gv, f32(w!), out));
    gx = make(out, x!.shape);
  }
  if (w!.requiresGrad) {
    const out = new Float32Array(outF * inF);
    gemm(gemmArgs(true, false, outF, inF, rows, gv, f32(x!), out));
    gw = make(out, w!.shape);
  }
  const gb = bias?.requiresGrad ? sum(reshape(g!, [rows, outF]), 0) : null;
  return [gx, gw, gb];
});

/** y = x·Wᵀ + b over the last dimension of x; W is [out, in]. */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  requireFloat(x, 'linear');
  if (weight.ndim !== 2) throw new ShapeError(`linear: weight must be 2-d [out, in], got [${weight.shape.join(', ')}]`);
  if (x.ndim === 0 || x.shape[x.ndim - 1] !== weight.shape[1]) {
    throw new ShapeError(
      `linear: input's last dimension (${x.shape[x.ndim - 1]}) must equal in_features ${weight.shape[1]} (input [${x.shape.join(', ')}])`,
    );
  }
  if (bias && (bias.ndim !== 1 || bias.shape[0] !== weight.shape[0])) {
    throw new ShapeError(`linear: bias must have shape [${weight.shape[0]}], got [${bias.shape.join(', ')}]`);
  }
  return run1('Linear', bias ? [x, weight, bias] : [x, weight], {});
}
