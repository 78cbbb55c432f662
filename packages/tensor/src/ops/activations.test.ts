import { describe, expect, it } from 'vitest';
import '../backends.js';
import '../tensor-methods.js';
import { randn, tensor } from '../creation.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { Generator } from '../random.js';
import type { Tensor } from '../tensor.js';
import { gradcheck } from '../testing/gradcheck.js';
import {
  clamp,
  elu,
  floor,
  gelu,
  hardsigmoid,
  hardswish,
  leakyRelu,
  prelu,
  relu6,
  round,
  selu,
  sigmoid,
  sign,
  silu,
  softplus,
  tanh,
} from './activations.js';
import { permute } from './view.js';

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol = 1e-6): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    if (!(Math.abs(a - e) <= tol * (1 + Math.abs(e))))
      throw new Error(`index ${i}: got ${a}, expected ${e} (tol ${tol})`);
  }
}

/** Random values pushed at least 0.1 away from the kinks of a piecewise op, so finite differences are valid. */
function awayFrom(kinks: number[], shape: number[], seed: number, scale = 3): Tensor {
  const t = randn(shape, { generator: new Generator(seed), std: scale });
  const d = t.data as Float32Array;
  for (let i = 0; i < d.length; i++)
    for (const k of kinks) if (Math.abs(d[i]! - k) < 0.1) d[i] = k + (d[i]! >= k ? 0.1 : -0.1);
  return t;
}

/** erf in float64: Maclaurin series near 0, the continued fraction for erfc further out. */
function erfRef(x: number): number {
  if (Math.abs(x) > 2.5) {
    const z = Math.abs(x);
    let k = z;
    for (let j = 80; j >= 1; j--) k = z + j / 2 / k;
    const erfc = Math.exp(-z * z) / (Math.sqrt(Math.PI) * k);
    return x > 0 ? 1 - erfc : erfc - 1;
  }
  let term = x;
  let s = x;
  for (let n = 1; n < 80; n++) {
    term *= (-x * x) / n;
    s += term / (2 * n + 1);
  }
  return (2 / Math.sqrt(Math.PI)) * s;
}

const SELU_A = 1.6732632423543772;
const SELU_S = 1.0507009873554805;

const cases: [string, (x: Tensor) => Tensor, (v: number) => number, number[]][] = [
  ['sigmoid', sigmoid, (v) => 1 / (1 + Math.exp(-v)), []],
  ['tanh', tanh, Math.tanh, []],
  ['silu', silu, (v) => v / (1 + Math.exp(-v)), []],
  ['gelu', (x) => gelu(x), (v) => 0.5 * v * (1 + erfRef(v / Math.SQRT2)), []],
  [
    'gelu tanh',
    (x) => gelu(x, { approximate: 'tanh' }),
    (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3))),
    [],
  ],
  ['relu6', relu6, (v) => Math.min(Math.max(v, 0), 6), [0, 6]],
  ['leakyRelu', (x) => leakyRelu(x, 0.2), (v) => (v > 0 ? v : 0.2 * v), [0]],
  ['leakyRelu default', (x) => leakyRelu(x), (v) => (v > 0 ? v : 0.01 * v), [0]],
  ['elu', (x) => elu(x, 0.7), (v) => (v > 0 ? v : 0.7 * (Math.exp(v) - 1)), [0]],
  ['selu', selu, (v) => SELU_S * (v > 0 ? v : SELU_A * (Math.exp(v) - 1)), [0]],
  ['hardsigmoid', hardsigmoid, (v) => Math.min(Math.max(v / 6 + 0.5, 0), 1), [-3, 3]],
  ['hardswish', hardswish, (v) => (v * Math.min(Math.max(v + 3, 0), 6)) / 6, [-3, 3]],
  ['softplus', (x) => softplus(x), (v) => Math.log(1 + Math.exp(v)), []],
  ['softplus beta=2', (x) => softplus(x, 2, 5), (v) => (2 * v > 5 ? v : Math.log(1 + Math.exp(2 * v)) / 2), [2.5]],
  ['clamp', (x) => clamp(x, -1, 2), (v) => Math.min(Math.max(v, -1), 2), [-1, 2]],
  ['clamp min only', (x) => clamp(x, 0.5), (v) => Math.max(v, 0.5), [0.5]],
  ['clamp max only', (x) => clamp(x, undefined, -0.5), (v) => Math.min(v, -0.5), [-0.5]],
];

describe('activations: forward values against direct formulas', () => {
  for (const [name, op, ref, kinks] of cases) {
    it(name, () => {
      const x = awayFrom(kinks, [6, 7], 11, 2.5);
      const y = op(x);
      expect(y.shape).toEqual([6, 7]);
      expect(y.dtype).toBe('float32');
      expectClose(y.values(), Array.from(x.values(), ref), 2e-6);
      // A transposed (non-contiguous) view gives the transposed result.
      const xt = permute(x, [1, 0]);
      expect(xt.isContiguous()).toBe(false);
      expectClose(op(xt).values(), permute(y, [1, 0]).values(), 0);
    });
  }

  it('sigmoid, silu and softplus stay finite for extreme inputs', () => {
    const x = tensor([-1000, -80, 0, 80, 1000]);
    expect(sigmoid(x).toArray()).toEqual([0, Math.fround(1 / (1 + Math.exp(80))), 0.5, 1, 1]);
    expect(silu(x).toArray().every(Number.isFinite)).toBe(true);
    expect(softplus(x).toArray()).toEqual([0, Math.fround(Math.log1p(Math.exp(-80))), Math.fround(Math.LN2), 80, 1000]);
    expect(tanh(x).toArray()).toEqual([-1, -1, 0, 1, 1]);
  });

  it('gelu keeps relative accuracy in the negative tail', () => {
    const x = tensor([-3, -2, -1, 0, 1, 2, 3]);
    const ref = x.toArray().map((v) => 0.5 * v * (1 + erfRef(v / Math.SQRT2)));
    const y = gelu(x).toArray();
    y.forEach((v, i) => {
      expect(Math.abs(v - ref[i]!)).toBeLessThanOrEqual(3e-7 * Math.abs(ref[i]!) + 1e-12);
    });
    expect(y[0]).toBeCloseTo(-0.0040496, 6);
  });

  it('round is half-to-even like torch.round; floor and sign', () => {
    const x = tensor([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6]);
    expect(
      round(x)
        .toArray()
        .map((v) => v + 0),
    ).toEqual([0, 2, 2, 4, 0, -2, -2, 2, 3, -3]);
    expect(floor(x).toArray()).toEqual([0, 1, 2, 3, -1, -2, -3, 2, 2, -3]);
    expect(sign(tensor([-2, 0, 3, NaN])).toArray()).toEqual([-1, 0, 1, NaN]);
  });

  it('round, floor, sign and relu6 keep integer dtypes', () => {
    const x = tensor([-7, 0, 3, 9], { dtype: 'int32' });
    expect(round(x).dtype).toBe('int32');
    expect(sign(x).toArray()).toEqual([-1, 0, 1, 1]);
    expect(relu6(x).toArray()).toEqual([0, 0, 3, 6]);
    expect(clamp(x, -1, 4).toArray()).toEqual([-1, 0, 3, 4]);
    expect(sigmoid(x).dtype).toBe('float32');
  });

  it('clamp follows torch on NaN and rejects missing bounds', () => {
    expect(clamp(tensor([NaN, 5]), 0, 1).toArray()).toEqual([NaN, 1]);
    expect(() => clamp(tensor([1]))).toThrow(InvalidArgumentError);
    expect(() => gelu(tensor([1]), { approximate: 'fast' as never })).toThrow(/approximate must be 'none' or 'tanh'/);
  });

  it('methods on Tensor', () => {
    const x = tensor([-2, -0.5, 0.5, 2]);
    expect(x.sigmoid().toArray()).toEqual(sigmoid(x).toArray());
    expect(x.clamp(-1, 1).toArray()).toEqual([-1, -0.5, 0.5, 1]);
    expect(x.leakyRelu(0.5).toArray()).toEqual([-1, -0.25, 0.5, 2]);
    expect(x.hardswish().toArray()).toEqual(hardswish(x).toArray());
    expect(x.gelu({ approximate: 'tanh' }).toArray()).toEqual(gelu(x, { approximate: 'tanh' }).toArray());
    expect(
      x
        .round()
        .toArray()
        .map((v) => v + 0),
    ).toEqual([-2, 0, 0, 2]);
  });
});

describe('activations: gradients against finite differences', () => {
  for (const [name, op, , kinks] of cases) {
    it(name, () => {
      const x = awayFrom(kinks, [3, 5], 21, 2.5);
      expect(gradcheck(op, [x])).toEqual([]);
    });
  }

  it('round, floor and sign have zero gradient', () => {
    for (const op of [round, floor, sign]) {
      const x = tensor([0.3, -1.7, 2.2], { requiresGrad: true });
      op(x)
        .mul(tensor([1, 2, 3]))
        .sum()
        .backward();
      expect(x.grad!.toArray()).toEqual([0, 0, 0]);
    }
  });

  it('relu6 and hardsigmoid pass no gradient at their boundaries; clamp does', () => {
    const x = tensor([0, 6, -3, 3], { requiresGrad: true });
    relu6(x).sum().backward();
    expect(x.grad!.toArray()).toEqual([0, 0, 0, 1]);
    const z = tensor([-1, 2], { requiresGrad: true });
    clamp(z, -1, 2).sum().backward();
    expect(z.grad!.toArray()).toEqual([1, 1]);
  });
});

describe('prelu', () => {
  const naive = (x: Tensor, w: number[]) => {
    const [n, c] = x.shape as [number, number];
    const inner = x.size / (n * c);
    return Array.from(x.values(), (v, i) => (v > 0 ? v : w[w.length === 1 ? 0 : Math.floor(i / inner) % c]! * v));
  };

  it('applies one slope per channel (axis 1) or a single slope', () => {
    const x = awayFrom([0], [2, 3, 4], 5);
    const w = tensor([0.1, -0.3, 0.25]);
    expectClose(prelu(x, w).values(), naive(x, [0.1, -0.3, 0.25]), 1e-7);
    expectClose(prelu(x, tensor([0.2])).values(), naive(x, [0.2]), 1e-7);
    expectClose(x.prelu(tensor(0.2)).values(), naive(x, [0.2]), 1e-7);
    const xt = permute(x, [0, 2, 1]);
    expectClose(
      prelu(xt, tensor([0.5, 0.5, 0.5, 0.5])).values(),
      Array.from(xt.values(), (v) => (v > 0 ? v : 0.5 * v)),
      1e-7,
    );
  });

  it('gradients for input and weight', () => {
    const x = awayFrom([0], [2, 3, 2, 2], 9);
    expect(gradcheck((a, w) => prelu(a, w), [x, tensor([0.1, -0.3, 0.25])])).toEqual([]);
    expect(gradcheck((a, w) => prelu(a, w), [awayFrom([0], [4, 5], 3), tensor([0.3])])).toEqual([]);
  });

  it('rejects a weight that does not match the channels', () => {
    expect(() => prelu(randn([2, 3, 4]), tensor([1, 2]))).toThrow(ShapeError);
    expect(() => prelu(randn([2, 3, 4]), tensor([1, 2]))).toThrow(/axis 1 of input \[2, 3, 4\] is 3/);
  });
});
