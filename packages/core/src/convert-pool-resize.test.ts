import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { defaultQatQconfig } from '@qtk/fake-quant';
import { bilinearTaps, FixedResize, QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import * as nn from '@qtk/nn';
import { UnsupportedOpError } from '@qtk/spec';
import {
  expand,
  Generator,
  interpolate,
  maxPool2d,
  pad,
  randn,
  relu,
  relu6,
  reshape,
  slice,
  split,
  Tensor,
  transpose,
} from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ConversionError, convertFx } from './index.js';
import { calibratedQat, callModel, maxSteps, moduleAt, outputStep, thrownBy } from './testing/convert-harness.js';

type March = 'bayes' | 'bernoulli2';
const MARCHES: March[] = ['bayes', 'bernoulli2'];

/** QuantStub → body → DeQuantStub, `op` a child module the body may call. */
class Net extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly dequant = new nn.DeQuantStub();
  readonly op: nn.Module;
  readonly body: (net: Net, x: Tensor) => Tensor;
  constructor(op: nn.Module | null, body: (net: Net, x: Tensor) => Tensor) {
    super();
    this.op = op ?? new nn.Identity();
    this.body = body;
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.body(this, this.quant.call(x)));
  }
}

const callOp = (n: Net, x: Tensor) => (n.op as unknown as { call(x: Tensor): Tensor }).call(x);

function prepared(net: Net, shape: number[], seed = 3, gain = 1): GraphModule {
  const g = new Generator(seed);
  return calibratedQat(
    net.eval(),
    { global: defaultQatQconfig },
    Array.from({ length: 3 }, () => randn(shape, { generator: g }).mul(gain)),
    { validation: false },
  );
}

/** Converts, runs both models on fresh random inputs; returns the largest error in output steps. */
function compare(
  net: Net,
  shape: number[],
  march: March,
  seed = 3,
  gain = 1,
): { steps: number; qat: GraphModule; fixed: GraphModule } {
  const qat = prepared(net, shape, seed, gain);
  const fixed = convertFx(qat, { march, onWarning: () => {} });
  const step = outputStep(qat);
  const g = new Generator(seed + 100);
  let worst = 0;
  for (let b = 0; b < 2; b++) {
    const x = randn(shape, { generator: g }).mul(gain);
    const want = callModel(qat, x);
    const got = callModel(fixed, x);
    expect(got.shape).toEqual(want.shape);
    worst = Math.max(worst, maxSteps(want, got, step));
  }
  return { steps: worst, qat, fixed };
}

function expectRejected(net: Net, shape: number[], march: March, op: RegExp): void {
  const qat = prepared(net, shape);
  const err = thrownBy(() => convertFx(qat, { march, onWarning: () => {} }));
  expect(err).toBeInstanceOf(ConversionError);
  const f = (err as ConversionError).failures[0]!;
  expect(f).toBeInstanceOf(UnsupportedOpError);
  expect(f.march).toBe(march);
  expect(f.op).toMatch(op);
  expect(f.node.length).toBeGreaterThan(0);
  expect((err as Error).message).toContain(f.node);
  expect((err as Error).message).toContain(march);
}

const IMG = [2, 3, 8, 8];
/** float32 rounding of the dequantized outputs */
const TOL = 1e-5;

// value-preserving ops: the fixed-point integers are exactly the fake-quant model's (no own output scale)
const VALUE_OPS: { name: string; make: () => Net; marches: March[]; rejectOp?: RegExp }[] = [
  {
    name: 'MaxPool2d module',
    make: () => new Net(new nn.MaxPool2d(3, { stride: 2, padding: 1, ceilMode: true }), callOp),
    marches: MARCHES,
  },
  { name: 'maxPool2d function', make: () => new Net(null, (_, x) => maxPool2d(x, 2)), marches: MARCHES },
  { name: 'ReLU module', make: () => new Net(new nn.ReLU(), callOp), marches: MARCHES },
  { name: 'relu function', make: () => new Net(null, (_, x) => relu(x)), marches: MARCHES },
  { name: 'relu method', make: () => new Net(null, (_, x) => x.relu()), marches: MARCHES },
  { name: 'zero pad', make: () => new Net(null, (_, x) => pad(x, [1, 2, 0, 1])), marches: MARCHES },
  { name: 'reshape', make: () => new Net(null, (_, x) => reshape(x, [2, 3, 64])), marches: MARCHES },
  { name: 'view method', make: () => new Net(null, (_, x) => x.view(2, 192)), marches: MARCHES },
  { name: 'Flatten module', make: () => new Net(new nn.Flatten(), callOp), marches: MARCHES },
  { name: 'flatten method', make: () => new Net(null, (_, x) => x.flatten(2)), marches: MARCHES },
  { name: 'unsqueeze/squeeze', make: () => new Net(null, (_, x) => x.unsqueeze(1).squeeze(1)), marches: MARCHES },
  { name: 'split + item', make: () => new Net(null, (_, x) => split(x, [1, 2], 1)[1]!), marches: MARCHES },
  {
    name: 'nearest Upsample module',
    make: () => new Net(new nn.Upsample({ scaleFactor: 2 }), callOp),
    marches: MARCHES,
  },
  {
    name: 'PixelShuffle',
    make: () => new Net(new nn.PixelShuffle(2), (n, x) => callOp(n, pad(x, [0, 0, 0, 0, 0, 1]))),
    marches: MARCHES,
  },
  { name: 'ChannelShuffle', make: () => new Net(new nn.ChannelShuffle(3), callOp), marches: MARCHES },
  {
    name: 'PixelUnshuffle',
    make: () => new Net(new nn.PixelUnshuffle(2), callOp),
    marches: ['bayes'],
    rejectOp: /PixelUnshuffle.*SpaceToDepth/,
  },
  {
    name: 'transpose',
    make: () => new Net(null, (_, x) => transpose(x, 2, 3)),
    marches: ['bayes'],
    rejectOp: /transpose.*Transpose/,
  },
  {
    name: 'permute',
    make: () => new Net(null, (_, x) => x.permute(0, 2, 3, 1).contiguous()),
    marches: ['bayes'],
    rejectOp: /permute.*Transpose/,
  },
  {
    name: 'slice',
    make: () => new Net(null, (_, x) => slice(x, { axis: 3, start: 1, end: 7, step: 2 })),
    marches: ['bayes'],
    rejectOp: /slice.*Slice/,
  },
  {
    name: 'expand',
    make: () => new Net(null, (_, x) => expand(slice(x, { axis: 1, start: 0, end: 1 }), [2, 4, 8, 8])),
    marches: ['bayes'],
    rejectOp: /Slice|Expand/,
  },
];

describe('convertFx: value-preserving ops (scale passes through)', () => {
  for (const c of VALUE_OPS) {
    for (const march of c.marches) {
      it(`${c.name} on ${march}: the same integers as the fake-quant model`, () => {
        const { steps, fixed } = compare(c.make(), IMG, march);
        expect(steps).toBe(0);
        const out = fixed.graph.nodes.filter(
          (n) => n.op === 'call_module' && moduleAt(fixed, n)?.constructor.name === 'FixedValueOp',
        );
        expect(out.length).toBeGreaterThan(0);
      });
    }
    if (c.rejectOp) {
      it(`${c.name} on bernoulli2: rejected naming node, op and march`, () =>
        expectRejected(c.make(), IMG, 'bernoulli2', c.rejectOp!));
    }
  }

  it('expand alone on bernoulli2 is rejected as Expand', () => {
    expectRejected(new Net(null, (_, x) => expand(x, [2, 3, 8, 8])), IMG, 'bernoulli2', /expand.*Expand/);
  });

  it('pad with a nonzero constant or a reflect mode is rejected on both marches', () => {
    for (const march of MARCHES) {
      expectRejected(new Net(null, (_, x) => pad(x, [1, 1, 1, 1], 'constant', 0.5)), IMG, march, /pad/);
      expectRejected(new Net(null, (_, x) => pad(x, [1, 1, 1, 1], 'reflect')), IMG, march, /pad.*Pad/);
    }
  });
});

describe('convertFx: ReLU6', () => {
  it('clamps at min(127, rhu(6 / s)) on bayes, within 1 step of the fake-quant model', () => {
    for (const make of [
      () => new Net(new nn.ReLU6(), callOp),
      () => new Net(null, (_, x) => relu6(x)),
      () => new Net(null, (_, x) => x.relu6()),
    ]) {
      expect(compare(make(), IMG, 'bayes', 3, 3).steps).toBeLessThanOrEqual(1 + TOL);
    }
    // inputs of about ±8 (3 × randn): 6 / s is below 127, so the clamp bites
    const { fixed } = compare(new Net(new nn.ReLU6(), callOp), IMG, 'bayes', 3, 3);
    const op = fixed
      .namedModules()
      .map(([, m]) => m)
      .find((m) => m.constructor.name === 'FixedValueOp') as unknown as {
      output: { clamp: [number, number]; scale: number };
    };
    expect(op.output.clamp[0]).toBe(0);
    expect(op.output.clamp[1]).toBeLessThan(127);
    expect(op.output.clamp[1]).toBe(Math.min(127, Math.floor(6 / op.output.scale + 0.5)));
  });

  it('standalone ReLU6 is rejected on bernoulli2 (only fused into a conv there)', () => {
    expectRejected(new Net(new nn.ReLU6(), callOp), IMG, 'bernoulli2', /ReLU6.*Clip/);
  });
});

describe('convertFx: resize', () => {
  it('nearest interpolate with its own output scale: requantized, within 1 step on both marches', () => {
    for (const march of MARCHES) {
      const { steps } = compare(new Net(null, (_, x) => interpolate(x, { scaleFactor: 2 })), IMG, march);
      expect(steps).toBeLessThanOrEqual(1 + TOL);
    }
  });

  for (const alignCorners of [false, true]) {
    it(`bilinear (alignCorners ${alignCorners}) within 1 step on both marches, with and without its own output scale`, () => {
      for (const march of MARCHES) {
        const own = compare(
          new Net(null, (_, x) => interpolate(x, { size: [11, 13], mode: 'bilinear', alignCorners })),
          IMG,
          march,
        );
        expect(own.steps).toBeLessThanOrEqual(1 + TOL);
        const pass = compare(
          new Net(new nn.Upsample({ scaleFactor: 2, mode: 'bilinear', alignCorners }), callOp),
          IMG,
          march,
        );
        expect(pass.steps).toBeLessThanOrEqual(1 + TOL);
        expect(pass.fixed.namedModules().some(([, m]) => m instanceof FixedResize)).toBe(true);
      }
    });
  }

  it('bilinear weights: 8 fractional bits from PyTorch coordinates (hand-computed)', () => {
    // half-pixel, ×2: src = (o + 0.5) / 2 − 0.5 = −0.25 (→ 0), 0.25, 0.75, 1.25
    expect(bilinearTaps(2, 4, 0.5, false)).toEqual({
      i0: Int32Array.from([0, 0, 0, 1]),
      i1: Int32Array.from([1, 1, 1, 1]),
      w0: Int32Array.from([256, 192, 64, 192]),
      w1: Int32Array.from([0, 64, 192, 64]),
    });
    // align corners 3 → 4: src = o · 2/3 → λ = 0, 2/3 (170.67 → 171), 1/3 (85.33 → 85), 0
    expect(bilinearTaps(3, 4, 0.75, true)).toEqual({
      i0: Int32Array.from([0, 0, 1, 2]),
      i1: Int32Array.from([1, 1, 2, 2]),
      w0: Int32Array.from([256, 85, 171, 256]),
      w1: Int32Array.from([0, 171, 85, 0]),
    });
  });

  it('bilinear integers: shrR(Σ w·x, 16) with half-up ties (hand-computed)', () => {
    const q = (v: number[], w: number) =>
      new QTensor(new Tensor({ data: Int8Array.from(v), shape: [1, 1, 1, w], dtype: 'int8' }), [0.1], 'qint8');
    const r = new FixedResize({ options: { size: [1, 4], mode: 'bilinear' } });
    // 256·(192·10 + 64·21) = 835584 → 12.75 → 13; 256·(64·10 + 192·21) → 18.25 → 18
    expect(Array.from(r.call(q([10, 21], 2)).ints())).toEqual([10, 13, 18, 21]);
    const a = new FixedResize({ options: { size: [1, 3], mode: 'bilinear', alignCorners: true } });
    expect(Array.from(a.call(q([0, 1], 2)).ints())).toEqual([0, 1, 1]); // 0.5 → 1
    expect(Array.from(a.call(q([-1, 0], 2)).ints())).toEqual([-1, 0, 0]); // −0.5 → 0
    expect(Array.from(a.call(q([-128, 127], 2)).ints())).toEqual([-128, 0, 127]); // −0.5 → 0
    expect(a.call(q([3, 4], 2)).scale[0]).toBeCloseTo(0.1, 7);
  });
});

describe('convertFx: average pooling', () => {
  const pools: [string, () => nn.AvgPool2d][] = [
    ['3×3 stride 2 pad 1 (count_include_pad)', () => new nn.AvgPool2d(3, { stride: 2, padding: 1 })],
    [
      '3×3 stride 2 pad 1 without count_include_pad',
      () => new nn.AvgPool2d(3, { stride: 2, padding: 1, countIncludePad: false }),
    ],
    ['3×3 stride 2 ceil_mode', () => new nn.AvgPool2d(3, { stride: 2, ceilMode: true })],
    [
      '2×2 ceil_mode pad 1 without count_include_pad',
      () => new nn.AvgPool2d(2, { stride: 2, padding: 1, ceilMode: true, countIncludePad: false }),
    ],
    ['7×7', () => new nn.AvgPool2d(7, { stride: 1 })],
  ];
  for (const [name, make] of pools) {
    for (const march of MARCHES) {
      it(`AvgPool2d ${name} on ${march}: within 1 step`, () => {
        const shape = [2, 3, 9, 9];
        expect(compare(new Net(make(), callOp), shape, march).steps).toBeLessThanOrEqual(1 + TOL);
      });
    }
  }

  it('an 8×8 AvgPool2d is rejected on bernoulli2 (kernel limit 7) and converts on bayes', () => {
    const make = () => new Net(new nn.AvgPool2d(8, { stride: 1 }), callOp);
    expectRejected(make(), [1, 2, 9, 9], 'bernoulli2', /AvgPool2d.*AveragePool/);
    expect(compare(make(), [1, 2, 9, 9], 'bayes').steps).toBeLessThanOrEqual(1 + TOL);
  });

  it('AdaptiveAvgPool2d: an AdaptiveAveragePool on bayes, an AveragePool on bernoulli2 while windows are <= 7', () => {
    for (const march of MARCHES) {
      expect(compare(new Net(new nn.AdaptiveAvgPool2d(1), callOp), [2, 3, 7, 7], march).steps).toBeLessThanOrEqual(
        1 + TOL,
      );
      expect(
        compare(new Net(new nn.AdaptiveAvgPool2d([2, 3]), callOp), [2, 3, 9, 10], march).steps,
      ).toBeLessThanOrEqual(1 + TOL);
    }
    expect(compare(new Net(new nn.AdaptiveAvgPool2d(1), callOp), [1, 2, 8, 8], 'bayes').steps).toBeLessThanOrEqual(
      1 + TOL,
    );
    const { fixed } = compare(new Net(new nn.AdaptiveAvgPool2d(1), callOp), [1, 2, 7, 7], 'bernoulli2');
    // the same converted model meets an 8×8 input: one window is larger than bernoulli2's limit
    expect(() =>
      (fixed as unknown as { call(x: Tensor): Tensor }).call(randn([1, 2, 8, 8], { generator: new Generator(1) })),
    ).toThrow(
      /node 'op', op 'AdaptiveAvgPool2d' as AveragePool, march 'bernoulli2'\): a 8×8 window exceeds this march's average-pool kernel limit of 7/,
    );
  });
});
