// The patch pool reads a conv's or linear layer's output at sampled positions as patches × weights, for every
// geometry: strides, padding (numbers, 'same', 'valid'), dilation, groups, 1-d and 3-d.
import { Conv1d, Conv2d, Conv3d, Linear } from '@qtk/nn';
import { Generator, matmul, noGrad, randn, reshape, type Tensor, transpose } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { patchPool } from './adaround-patches.js';

const g = new Generator(4);

function worstError(
  layer: { weight: Tensor; forward(x: Tensor): Tensor },
  x: Tensor,
  rows: number,
): { worst: number; m: number } {
  const pool = patchPool(
    layer,
    x,
    noGrad(() => layer.forward(x)),
    rows,
    new Generator(1),
  )!;
  const [groups, m, j] = pool.patches.shape as [number, number, number];
  const w = layer.weight;
  const got = noGrad(() => matmul(pool.patches, transpose(reshape(w, [groups, w.size / (groups * j), j])))).values();
  const want = pool.targets.values();
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(want[i]! - got[i]!));
  return { worst, m };
}

describe('patchPool', () => {
  const cases: [string, { weight: Tensor; forward(x: Tensor): Tensor }, number[]][] = [
    ['conv 3×3 pad 1', new Conv2d(4, 6, 3, { padding: 1, generator: g }), [2, 4, 7, 7]],
    [
      'conv stride 2, pad 2, dilation 2',
      new Conv2d(4, 6, 3, { stride: 2, padding: 2, dilation: 2, generator: g }),
      [2, 4, 9, 8],
    ],
    ['depthwise 3×3 stride 2', new Conv2d(6, 6, 3, { stride: 2, padding: 1, groups: 6, generator: g }), [2, 6, 7, 7]],
    ['grouped 1×5, same', new Conv2d(4, 8, [1, 5], { padding: 'same', groups: 2, generator: g }), [2, 4, 3, 9]],
    ['valid', new Conv2d(3, 2, 2, { padding: 'valid', generator: g }), [1, 3, 5, 4]],
    ['conv1d', new Conv1d(3, 5, 3, { stride: 2, padding: 1, generator: g }), [2, 3, 11]],
    ['conv3d', new Conv3d(2, 3, 3, { padding: 1, generator: g }), [1, 2, 4, 5, 5]],
    ['linear on 3-d input', new Linear(6, 4, { generator: g }), [2, 5, 6]],
  ];
  for (const [name, layer, shape] of cases) {
    it(`${name}: targets are patches times the weight`, () => {
      const x = randn(shape, { generator: g });
      const { worst, m } = worstError(layer, x, 40);
      expect(m).toBeGreaterThan(0);
      expect(m).toBeLessThanOrEqual(40);
      expect(worst).toBeLessThan(1e-4);
    });
  }

  it('takes every position when there are fewer than asked for, and is null for other layers', () => {
    const conv = new Conv2d(2, 3, 3, { generator: g });
    expect(worstError(conv, randn([1, 2, 4, 4], { generator: g }), 1000).m).toBe(4);
    expect(patchPool({}, randn([1], { generator: g }), randn([1], { generator: g }), 10, g)).toBeNull();
  });
});
