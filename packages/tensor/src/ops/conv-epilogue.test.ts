import { afterEach, describe, expect, it } from 'vitest';
import {
  add,
  conv1d,
  conv2d,
  conv3d,
  convWithEpilogue,
  Generator,
  kernels,
  randn,
  relu,
  relu6,
  sum,
  tensor,
  type ConvActivation,
  type Tensor,
} from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';

// convWithEpilogue must give exactly what conv, add and the activation give one after the other, on the
// wasm kernels and on the cpu ones, forward and backward.

const CONVS = { 1: conv1d, 2: conv2d, 3: conv3d } as const;

interface Case {
  x: number[];
  w: number[];
  stride?: number;
  padding?: number;
  groups?: number;
  bias: boolean;
  add: boolean;
  activation: ConvActivation | null;
}

const CASES: Case[] = [
  { x: [3, 4, 9, 11], w: [6, 4, 3, 3], padding: 1, bias: true, add: true, activation: 'relu' },
  { x: [2, 4, 9, 11], w: [6, 2, 3, 3], stride: 2, padding: 1, groups: 2, bias: false, add: true, activation: 'relu6' },
  { x: [2, 8, 7, 7], w: [8, 8, 1, 1], bias: true, add: false, activation: 'relu' },
  { x: [2, 3, 13], w: [5, 3, 3], padding: 1, bias: true, add: true, activation: null },
  { x: [1, 2, 4, 5, 6], w: [3, 2, 3, 3, 3], padding: 1, bias: false, add: false, activation: 'relu6' },
];

function operands(c: Case, seed: number) {
  const g = new Generator(seed);
  const x = randn(c.x, { generator: g }).mul(tensor(3));
  const w = randn(c.w, { generator: g });
  const b = c.bias ? randn([c.w[0]!], { generator: g }) : null;
  const r = c.w.length - 2;
  const y = CONVS[r as 1 | 2 | 3](x, w, b, { stride: c.stride, padding: c.padding, groups: c.groups });
  const other = c.add ? randn(y.shape, { generator: g }).mul(tensor(4)) : null;
  // values at the activation's edges: exact zeros, 6 and just around them, NaN
  if (other) {
    const o = other.values() as Float32Array;
    const yv = y.values();
    for (let i = 0; i < o.length; i += 7) o[i] = -yv[i]!;
    for (let i = 3; i < o.length; i += 11) o[i] = 6 - yv[i]!;
    o[5] = Number.NaN;
  }
  return { x, w, b, other, r };
}

function separate(c: Case, x: Tensor, w: Tensor, b: Tensor | null, other: Tensor | null, r: number): Tensor {
  let y = CONVS[r as 1 | 2 | 3](x, w, b, { stride: c.stride, padding: c.padding, groups: c.groups });
  if (other) y = add(y, other);
  return c.activation === 'relu' ? relu(y) : c.activation === 'relu6' ? relu6(y) : y;
}

const bits = (t: Tensor) => Array.from(new Uint32Array((t.values() as Float32Array).slice().buffer));

afterEach(() => kernels.setBackendEnabled('wasm', true));

describe('convWithEpilogue: the same bits as conv, add and the activation', () => {
  for (const backend of ['wasm', 'cpu'] as const) {
    it(`forward and every gradient, ${backend} kernels, 1-d to 3-d, groups, stride, with and without bias or add`, () => {
      kernels.setBackendEnabled('wasm', backend === 'wasm');
      CASES.forEach((c, k) => {
        const { x, w, b, other, r } = operands(c, 40 + k);
        for (const t of [x, w, b, other]) if (t) t.requiresGrad = true;
        const fused = convWithEpilogue(
          x,
          w,
          b,
          { stride: c.stride, padding: c.padding, groups: c.groups },
          {
            other,
            activation: c.activation,
          },
        );
        const ref = separate(c, x, w, b, other, r);
        expect(fused.shape).toEqual(ref.shape);
        expect(bits(fused)).toEqual(bits(ref));
        const seed = randn(ref.shape, { generator: new Generator(7) });
        const grads = (out: Tensor) => {
          for (const t of [x, w, b, other]) if (t) t.grad = null;
          sum(out.mul(seed)).backward();
          return [x, w, b, other].filter((t): t is Tensor => t !== null).map((t) => bits(t.grad!));
        };
        const gf = grads(fused);
        expect(gf).toEqual(grads(ref));
      });
    });
  }

  it('the wasm kernel served the fused op, and applied the epilogue (a ReLU output has no negative value)', () => {
    const { x, w, b, other } = operands(CASES[0]!, 3);
    const attrs = { stride: [1, 1], pads: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
    const a = { ...attrs, hasBias: true, withAdd: true, activation: 'relu' };
    expect(kernels.resolve('ConvEpilogue', [x, w, b!, other!], a).backend).toBe('wasm');
    const y = convWithEpilogue(x, w, b, { padding: 1 }, { other, activation: 'relu' }).values();
    expect(Array.from(y).filter((v) => v < 0)).toEqual([]);
    expect(Array.from(y).filter((v) => v === 0).length).toBeGreaterThan(y.length / 4);
  });

  it('broadcasting `other` and unbatched inputs give the separate ops’ result', () => {
    const g = new Generator(5);
    const x = randn([4, 6, 6], { generator: g });
    const w = randn([5, 4, 3, 3], { generator: g });
    const perChannel = randn([5, 1, 1], { generator: g });
    const y = convWithEpilogue(x, w, null, { padding: 1 }, { other: perChannel, activation: 'relu' });
    expect(y.shape).toEqual([5, 6, 6]);
    expect(bits(y)).toEqual(bits(relu(add(conv2d(x, w, null, { padding: 1 }), perChannel))));
    const same = randn([5, 6, 6], { generator: g });
    const z = convWithEpilogue(x, w, null, { padding: 1 }, { other: same, activation: 'relu6' });
    expect(bits(z)).toEqual(bits(relu6(add(conv2d(x, w, null, { padding: 1 }), same))));
  });

  it('gradcheck on the cpu kernels (finite differences)', () => {
    kernels.setBackendEnabled('wasm', false);
    const g = new Generator(8);
    const x = randn([2, 2, 5, 5], { generator: g });
    const w = randn([3, 2, 3, 3], { generator: g });
    const b = randn([3], { generator: g });
    // other puts every ReLU input at ±0.5 or more, away from the kink the finite differences would cross
    const s = conv2d(x, w, b, { padding: 1 }).values();
    const other = tensor(Array.from(s, (v, i) => -v + (i % 3 === 0 ? -0.5 : 0.5 + (i % 5) * 0.1))).reshape([
      2, 3, 5, 5,
    ]);
    const f = (xx: Tensor, ww: Tensor, bb: Tensor, oo: Tensor) =>
      convWithEpilogue(xx, ww, bb, { padding: 1 }, { other: oo, activation: 'relu' });
    expect(gradcheck(f, [x, w, b, other])).toEqual([]);
  });
});
