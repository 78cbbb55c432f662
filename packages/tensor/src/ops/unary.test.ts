import { describe, expect, it } from 'vitest';
import { abs, exp, Generator, log, neg, randn, reciprocal, rsqrt, sqrt, tensor, toType } from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';
import type { Tensor } from '../tensor.js';

const positive = () =>
  randn([3, 4], { generator: new Generator(3) })
    .abs()
    .add(0.5);
const mixed = () => randn([3, 4], { generator: new Generator(4) });

describe('elementary unary ops', () => {
  it('compute the textbook values', () => {
    const x = tensor([0.25, 1, 4]);
    expect(sqrt(x).toArray()).toEqual([0.5, 1, 2]);
    expect(rsqrt(x).toArray()).toEqual([2, 1, 0.5]);
    expect(reciprocal(x).toArray()).toEqual([4, 1, 0.25]);
    expect(log(tensor([1, Math.E])).toArray()[1]).toBeCloseTo(1, 6);
    expect(exp(tensor([0, 1])).toArray()[1]).toBeCloseTo(Math.E, 5);
    expect(neg(tensor([3, -2], { dtype: 'int16' })).toArray()).toEqual([-3, 2]);
    expect(abs(tensor([-3, 2], { dtype: 'int8' })).dtype).toBe('int8');
  });

  it('cast truncates toward zero and saturates float→int', () => {
    expect(toType(tensor([1.7, -1.7, 300, -300]), 'int8').toArray()).toEqual([1, -1, 127, -128]);
    expect(toType(tensor([0, 2.5]), 'bool').toArray()).toEqual([0, 1]);
  });

  const cases: [string, (t: Tensor) => Tensor, () => Tensor][] = [
    ['neg', neg, mixed],
    ['exp', exp, mixed],
    ['log', log, positive],
    ['sqrt', sqrt, positive],
    ['rsqrt', rsqrt, positive],
    ['reciprocal', reciprocal, positive],
    ['abs', abs, () => mixed().add(mixed().sign().mul(0.2))],
    ['cast to float32 of a float tensor', (t) => toType(t.mul(2), 'float32'), mixed],
  ];
  for (const [name, op, input] of cases) {
    it(`${name}: gradient matches finite differences`, () => {
      expect(gradcheck(op, [input()], { eps: 1e-3 })).toEqual([]);
    });
  }
});
