import { describe, expect, it } from 'vitest';
import {
  ceil,
  cos,
  erf,
  Generator,
  logicalAnd,
  logicalNot,
  logicalOr,
  logicalXor,
  opOfFunction,
  randn,
  sin,
  tensor,
} from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';

describe('erf, sin, cos, ceil', () => {
  it('compute the tabulated values', () => {
    // erf from Abramowitz & Stegun, table 7.1
    const e = erf(tensor([0, 0.5, 1, -2, 3])).toArray() as number[];
    const want = [0, 0.5204998778, 0.8427007929, -0.995322265, 0.9999779095];
    for (const [i, v] of e.entries()) expect(Math.abs(v - want[i]!)).toBeLessThan(2e-7);
    expect(erf(tensor([-0.3])).toArray()[0]).toBe(-(erf(tensor([0.3])).toArray()[0] as number));
    expect(sin(tensor([Math.PI / 6])).toArray()[0]).toBeCloseTo(0.5, 6);
    expect(cos(tensor([Math.PI / 3])).toArray()[0]).toBeCloseTo(0.5, 6);
    expect(ceil(tensor([-1.5, 0.2, 2])).toArray()).toEqual([-1, 1, 2]);
    expect(tensor([1, 2]).erf().toArray()[1]).toBeCloseTo(0.995322265, 6);
  });

  for (const [name, op] of [
    ['erf', erf],
    ['sin', sin],
    ['cos', cos],
  ] as const) {
    it(`${name}: gradient matches finite differences`, () => {
      expect(gradcheck((t) => op(t), [randn([3, 4], { generator: new Generator(5) })], { eps: 1e-3 })).toEqual([]);
    });
  }

  it('are in the op catalog under their ONNX names', () => {
    expect(opOfFunction('erf', { args: [] })?.op).toBe('Erf');
    expect(opOfFunction('ceil', { args: [] })?.op).toBe('Ceil');
    expect(opOfFunction('logicalNot', { args: [] })?.op).toBe('Not');
  });
});

describe('logical ops', () => {
  const a = tensor([1, 0, 1, 0]).gt(0);
  const b = tensor([1, 1, 0, 0]).gt(0);
  it('follow the truth tables, broadcasting', () => {
    expect(logicalNot(a).toArray()).toEqual([0, 1, 0, 1]);
    expect(logicalAnd(a, b).toArray()).toEqual([1, 0, 0, 0]);
    expect(logicalOr(a, b).toArray()).toEqual([1, 1, 1, 0]);
    expect(logicalXor(a, b).toArray()).toEqual([0, 1, 1, 0]);
    expect(logicalAnd(a, tensor([1]).gt(0)).toArray()).toEqual([1, 0, 1, 0]);
    expect(logicalOr(a, b).dtype).toBe('bool');
  });

  it('refuse non-bool operands with a DTypeError', () => {
    expect(() => logicalAnd(tensor([1]), b)).toThrow(/logicalAnd: operands must be bool, got float32/);
  });
});
