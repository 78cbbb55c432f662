import { describe, expect, it } from 'vitest';
import '../backends.js';
import '../tensor-methods.js';
import { randint, randn, tensor } from '../creation.js';
import { DTypeError, InvalidArgumentError, ShapeError } from '../errors.js';
import { Generator } from '../random.js';
import type { Tensor } from '../tensor.js';
import { gradcheck } from '../testing/gradcheck.js';
import { crossEntropy, l1Loss, mseLoss, type Reduction } from './cross-entropy.js';

/** Per-row loss −Σ_c q_c·log p_c with q = (1 − ε)·onehot + ε/C, in float64. */
function naiveRows(logits: Tensor, target: Tensor, eps: number): number[] {
  const [n, c] = logits.shape as [number, number];
  const rows: number[] = [];
  for (let i = 0; i < n; i++) {
    let z = 0;
    for (let k = 0; k < c; k++) z += Math.exp(logits.at(i, k));
    let loss = 0;
    for (let k = 0; k < c; k++) {
      const q = (k === target.at(i) ? 1 - eps : 0) + eps / c;
      loss -= q * Math.log(Math.exp(logits.at(i, k)) / z);
    }
    rows.push(loss);
  }
  return rows;
}

const reduceNaive = (rows: number[], r: Reduction) =>
  r === 'none'
    ? rows
    : r === 'sum'
      ? [rows.reduce((a, b) => a + b, 0)]
      : [rows.reduce((a, b) => a + b, 0) / rows.length];

describe('crossEntropy', () => {
  const logits = randn([6, 5], { generator: new Generator(2), std: 2 });
  const target = randint(0, 5, [6], { generator: new Generator(3) });

  it('hand-computed value, with and without label smoothing', () => {
    const l = tensor([[1, 2, 3]]);
    const t = tensor([2], { dtype: 'int32' });
    const lse = Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3));
    expect(crossEntropy(l, t).item()).toBeCloseTo(lse - 3, 6);
    expect(crossEntropy(l, t, { labelSmoothing: 0.1 }).item()).toBeCloseTo(lse - 0.9 * 3 - (0.1 / 3) * 6, 6);
  });

  for (const eps of [0, 0.1, 1]) {
    for (const reduction of ['mean', 'sum', 'none'] as const) {
      it(`matches −Σ q·log softmax (ε=${eps}, ${reduction})`, () => {
        const y = crossEntropy(logits, target, { labelSmoothing: eps, reduction });
        expect(y.shape).toEqual(reduction === 'none' ? [6] : []);
        const expected = reduceNaive(naiveRows(logits, target, eps), reduction);
        y.toArray().forEach((v, i) => {
          expect(v).toBeCloseTo(expected[i]!, 5);
        });
      });
      it(`gradient (ε=${eps}, ${reduction})`, () => {
        const l = randn([4, 3], { generator: new Generator(7) });
        const t = tensor([0, 2, 1, 2], { dtype: 'int32' });
        expect(gradcheck((x) => crossEntropy(x, t, { labelSmoothing: eps, reduction }), [l])).toEqual([]);
      });
    }
  }

  it('gradient is softmax − smoothed one-hot, divided by N for the mean', () => {
    const l = tensor([[0, Math.log(3)]], { requiresGrad: true });
    crossEntropy(l, tensor([1], { dtype: 'int32' }), { labelSmoothing: 0.2 }).backward();
    // softmax = [0.25, 0.75]; q = [0.1, 0.9]
    const g = l.grad!.toArray();
    expect(g[0]).toBeCloseTo(0.15, 6);
    expect(g[1]).toBeCloseTo(-0.15, 6);
  });

  it('is stable for huge logits', () => {
    const l = tensor([
      [1000, 0, -1000],
      [5e4, 5e4, 5e4],
    ]);
    const y = crossEntropy(l, tensor([0, 1], { dtype: 'int32' }), { reduction: 'none' });
    expect(y.toArray()[0]).toBeCloseTo(0, 6);
    expect(y.toArray()[1]).toBeCloseTo(Math.log(3), 5);
  });

  it('rejects a target out of range, naming the index and value', () => {
    const t = tensor([0, 1, 5, 2, 0, 1], { dtype: 'int32' });
    expect(() => crossEntropy(logits, t)).toThrow(InvalidArgumentError);
    expect(() => crossEntropy(logits, t)).toThrow(/target\[2\] = 5 is out of range for 5 classes/);
    expect(() => crossEntropy(logits, tensor([0, -1, 0, 0, 0, 0], { dtype: 'int32' }))).toThrow(/target\[1\] = -1/);
  });

  it('validates dtype, shapes and options', () => {
    expect(() => crossEntropy(logits, target.toType('float32'))).toThrow(DTypeError);
    expect(() => crossEntropy(logits, tensor([0, 1], { dtype: 'int32' }))).toThrow(ShapeError);
    expect(() => crossEntropy(randn([2, 3, 4]), tensor([0, 1], { dtype: 'int32' }))).toThrow(/logits must be \[N, C\]/);
    expect(() => crossEntropy(logits, target, { labelSmoothing: 1.5 })).toThrow(InvalidArgumentError);
    expect(() => crossEntropy(logits, target, { reduction: 'avg' as never })).toThrow(/reduction must be one of/);
  });

  it('ignoreIndex drops rows from the loss, the mean and the gradient', () => {
    const t = tensor([0, -100, 4, -100, 1, 2], { dtype: 'int32' });
    const kept = [0, 2, 4, 5];
    const rows = naiveRows(logits, tensor([0, 0, 4, 0, 1, 2], { dtype: 'int32' }), 0.1);
    const mean = kept.reduce((s, i) => s + rows[i]!, 0) / kept.length;
    expect(crossEntropy(logits, t, { ignoreIndex: -100, labelSmoothing: 0.1 }).item()).toBeCloseTo(mean, 5);
    const none = crossEntropy(logits, t, { ignoreIndex: -100, reduction: 'none' }).toArray();
    expect(none[1]).toBe(0);
    expect(none[3]).toBe(0);
    const l = randn([6, 5], { generator: new Generator(5) });
    expect(gradcheck((x) => crossEntropy(x, t, { ignoreIndex: -100, labelSmoothing: 0.1 }), [l])).toEqual([]);
  });

  it('method form', () => {
    expect(logits.crossEntropy(target).item()).toBe(crossEntropy(logits, target).item());
  });
});

describe('mseLoss and l1Loss', () => {
  const a = randn([3, 4], { generator: new Generator(11) });
  const b = randn([3, 4], { generator: new Generator(12) });
  const diffs = a.toArray().map((v, i) => v - b.toArray()[i]!);

  for (const reduction of ['mean', 'sum', 'none'] as const) {
    it(`values (${reduction})`, () => {
      const sq = diffs.map((d) => d * d);
      const ab = diffs.map(Math.abs);
      const red = (v: number[]) => reduceNaive(v, reduction);
      mseLoss(a, b, reduction)
        .toArray()
        .forEach((v, i) => {
          expect(v).toBeCloseTo(red(sq)[i]!, 5);
        });
      l1Loss(a, b, reduction)
        .toArray()
        .forEach((v, i) => {
          expect(v).toBeCloseTo(red(ab)[i]!, 5);
        });
      expect(mseLoss(a, b, reduction).shape).toEqual(reduction === 'none' ? [3, 4] : []);
    });
    it(`gradients (${reduction})`, () => {
      expect(gradcheck((x, y) => mseLoss(x, y, reduction), [a.clone(), b.clone()])).toEqual([]);
      expect(gradcheck((x, y) => l1Loss(x, y, reduction), [a.clone(), b.clone()])).toEqual([]);
    });
  }

  it('defaults to the mean and checks shapes', () => {
    expect(mseLoss(tensor([1, 2]), tensor([2, 4])).item()).toBeCloseTo(2.5, 6);
    expect(a.l1Loss(b).item()).toBe(l1Loss(a, b).item());
    expect(() => mseLoss(a, randn([4]))).toThrow(ShapeError);
  });
});
