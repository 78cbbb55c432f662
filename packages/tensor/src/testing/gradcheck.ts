import { noGrad } from '../autograd.js';
import { Generator } from '../random.js';
import { Tensor } from '../tensor.js';
import { mul } from '../ops/binary.js';
import { sum } from '../ops/reduce.js';

export interface GradcheckOptions {
  /** Central-difference step. */
  eps?: number;
  atol?: number;
  rtol?: number;
  seed?: number;
}

export interface GradcheckMismatch {
  input: number;
  index: number;
  analytic: number;
  numeric: number;
}

/**
 * Compares autograd gradients of `fn` with central finite differences. The scalar checked is
 * Σ fn(inputs) ⊙ r for a fixed random r, so every output element contributes. Inputs must be
 * contiguous float32 leaves; the float32 finite differences are computed with float64 sums.
 */
export function gradcheck(
  fn: (...inputs: Tensor[]) => Tensor | Tensor[],
  inputs: Tensor[],
  options: GradcheckOptions = {},
): GradcheckMismatch[] {
  const eps = options.eps ?? 1e-2;
  const atol = options.atol ?? 2e-2;
  const rtol = options.rtol ?? 2e-2;
  const gen = new Generator(options.seed ?? 1234);
  const outs = () => {
    const o = fn(...inputs);
    return Array.isArray(o) ? o : [o];
  };
  const first = noGrad(outs);
  const weights = first.map((o) => {
    const w = new Float32Array(o.size);
    for (let i = 0; i < w.length; i++) w[i] = gen.uniform() * 2 - 1;
    return new Tensor({ data: w, shape: o.shape, dtype: 'float32' });
  });
  const objective = (os: Tensor[]) =>
    os.reduce<Tensor | null>((acc, o, i) => {
      const term = sum(mul(o, weights[i]!));
      return acc ? acc.add(term) : term;
    }, null)!;
  const objectiveF64 = () => {
    const os = noGrad(outs);
    let s = 0;
    os.forEach((o, i) => {
      const v = o.values();
      const w = weights[i]!.data;
      for (let j = 0; j < v.length; j++) s += v[j]! * w[j]!;
    });
    return s;
  };
  for (const x of inputs) {
    x.grad = null;
    x.requiresGrad = true;
  }
  objective(outs()).backward();
  const mismatches: GradcheckMismatch[] = [];
  inputs.forEach((x, k) => {
    const analytic = x.grad ? x.grad.values() : new Float32Array(x.size);
    const data = x.data as Float32Array;
    for (let i = 0; i < x.size; i++) {
      const p = x.offset + i;
      const orig = data[p]!;
      data[p] = orig + eps;
      const up = objectiveF64();
      data[p] = orig - eps;
      const down = objectiveF64();
      data[p] = orig;
      const numeric = (up - down) / (2 * eps);
      const a = analytic[i]!;
      if (!(Math.abs(a - numeric) <= atol + rtol * Math.abs(numeric))) {
        mismatches.push({ input: k, index: i, analytic: a, numeric });
      }
    }
  });
  return mismatches;
}
