import { describe, expect, it } from 'vitest';
import {
  Generator,
  InvalidArgumentError,
  ShapeError,
  convTranspose1d,
  convTranspose2d,
  randn,
  type Tensor,
} from '../index.js';
import { gradcheck } from '../testing/gradcheck.js';
import { expectTensorNear } from '../testing/expect-near.js';

const gen = () => new Generator(5);

interface Opts {
  stride: [number, number];
  pad: [number, number];
  outPad: [number, number];
  dil: [number, number];
  groups: number;
}

/** Direct transposed convolution: every input pixel scatters weight·x into the output. */
function naive(x: Tensor, w: Tensor, b: Tensor | null, o: Opts): { data: number[]; shape: number[] } {
  const [N, CI, H, W] = x.shape as [number, number, number, number];
  const [, COG, KH, KW] = w.shape as [number, number, number, number];
  const G = o.groups;
  const CO = COG * G;
  const CIG = CI / G;
  const OH = (H - 1) * o.stride[0] - 2 * o.pad[0] + o.dil[0] * (KH - 1) + o.outPad[0] + 1;
  const OW = (W - 1) * o.stride[1] - 2 * o.pad[1] + o.dil[1] * (KW - 1) + o.outPad[1] + 1;
  const out = new Array<number>(N * CO * OH * OW).fill(0);
  const xv = x.toArray();
  const wv = w.toArray();
  const bv = b?.toArray();
  for (let n = 0; n < N; n++)
    for (let co = 0; co < CO; co++)
      for (let i = 0; i < OH * OW; i++) out[(n * CO + co) * OH * OW + i] = bv ? bv[co]! : 0;
  for (let n = 0; n < N; n++)
    for (let ci = 0; ci < CI; ci++) {
      const g = Math.floor(ci / CIG);
      for (let i = 0; i < H; i++)
        for (let j = 0; j < W; j++)
          for (let oc = 0; oc < COG; oc++)
            for (let a = 0; a < KH; a++)
              for (let e = 0; e < KW; e++) {
                const y = i * o.stride[0] - o.pad[0] + a * o.dil[0];
                const xx = j * o.stride[1] - o.pad[1] + e * o.dil[1];
                if (y < 0 || xx < 0 || y >= OH || xx >= OW) continue;
                const co = g * COG + oc;
                out[((n * CO + co) * OH + y) * OW + xx]! +=
                  xv[((n * CI + ci) * H + i) * W + j]! * wv[((ci * COG + oc) * KH + a) * KW + e]!;
              }
    }
  return { data: out, shape: [N, CO, OH, OW] };
}

const expectClose = (actual: Tensor, expected: { data: number[]; shape: number[] }) =>
  expectTensorNear(actual, expected, 1e-4);

const base: Opts = { stride: [1, 1], pad: [0, 0], outPad: [0, 0], dil: [1, 1], groups: 1 };

describe('convTranspose2d', () => {
  const cases: [string, number[], number[], Partial<Opts>, boolean][] = [
    ['plain 3x3 with bias', [2, 3, 4, 4], [3, 2, 3, 3], {}, true],
    [
      'stride 2, padding 1, output padding 1',
      [2, 2, 3, 4],
      [2, 3, 3, 3],
      { stride: [2, 2], pad: [1, 1], outPad: [1, 1] },
      true,
    ],
    [
      'dilation 2, stride (2,1), groups 2',
      [1, 4, 3, 3],
      [4, 1, 2, 3],
      { stride: [2, 1], dil: [2, 2], groups: 2, pad: [1, 0] },
      false,
    ],
    ['output padding under dilation > stride', [1, 1, 3, 3], [1, 2, 2, 2], { dil: [3, 3], outPad: [2, 1] }, true],
  ];
  for (const [name, xs, ws, partial, withBias] of cases) {
    it(`forward: ${name}`, () => {
      const g = gen();
      const o = { ...base, ...partial };
      const x = randn(xs, { generator: g });
      const w = randn(ws, { generator: g });
      const b = withBias ? randn([ws[1]! * o.groups], { generator: g }) : null;
      const y = convTranspose2d(x, w, b, {
        stride: o.stride,
        padding: o.pad,
        outputPadding: o.outPad,
        dilation: o.dil,
        groups: o.groups,
      });
      expectClose(y, naive(x, w, b, o));
    });
  }

  it('gradients with stride, padding, output padding and groups', () => {
    const g = gen();
    const x = randn([2, 4, 3, 3], { generator: g });
    const w = randn([4, 1, 3, 2], { generator: g });
    const b = randn([2], { generator: g });
    const f = (xx: Tensor, ww: Tensor, bb: Tensor) =>
      convTranspose2d(xx, ww, bb, { stride: [2, 3], padding: [1, 0], outputPadding: [1, 2], groups: 2 });
    expect(gradcheck(f, [x, w, b])).toEqual([]);
  });

  it('convTranspose1d matches the 2-d op with a unit height', () => {
    const g = gen();
    const x = randn([2, 2, 5], { generator: g });
    const w = randn([2, 3, 3], { generator: g });
    const y = convTranspose1d(x, w, null, { stride: 2, padding: 1 });
    const ref = naive(x.reshape([2, 2, 1, 5]), w.reshape([2, 3, 1, 3]), null, { ...base, stride: [1, 2], pad: [0, 1] });
    expectClose(y, { data: ref.data, shape: [2, 3, 9] });
    expect(gradcheck((xx, ww) => convTranspose1d(xx!, ww!, null, { stride: 2, padding: 1 }), [x, w])).toEqual([]);
  });

  it('validates arguments', () => {
    const x = randn([1, 2, 3, 3]);
    expect(() => convTranspose2d(x, randn([3, 1, 3, 3]))).toThrow(ShapeError);
    expect(() => convTranspose2d(x, randn([2, 1, 3, 3]), null, { stride: 2, outputPadding: 2 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => convTranspose2d(x, randn([2, 1, 3, 3]), randn([2]))).toThrow(/bias must have shape \[1\]/);
    expect(() => convTranspose2d(x, randn([2, 1, 3, 3]), null, { groups: 2 })).not.toThrow();
    expect(() => convTranspose2d(x, randn([2, 1, 1, 1]), null, { padding: 2 })).toThrow(/no output/);
  });
});
