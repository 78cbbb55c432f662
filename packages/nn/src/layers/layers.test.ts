import * as T from '@qtk/tensor';
import { Generator, randn, type Tensor, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import * as F from '../functional.js';
import type { Module } from '../module.js';
import * as act from './activation.js';
import { Flatten, Identity } from './basic.js';
import { Sequential } from './container.js';
import { Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d } from './conv.js';
import { Dropout } from './dropout.js';
import { Linear } from './linear.js';
import { BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm } from './normalization.js';
import { AdaptiveAvgPool2d, AvgPool2d, MaxPool2d } from './pooling.js';
import { SyncBatchNorm } from './sync-batch-norm.js';
import { Upsample } from './upsample.js';

const g = () => new Generator(123);
const same = (a: Tensor, b: Tensor) => {
  expect(a.shape).toEqual(b.shape);
  expect(a.toArray()).toEqual(b.toArray());
};

describe('layers wrap their tensor op with their own parameters', () => {
  it('Linear', () => {
    const m = new Linear(5, 3, { generator: g() });
    const x = randn([4, 5], { generator: g() });
    same(m.call(x), T.linear(x, m.weight, m.bias));
    expect(m.weight.shape).toEqual([3, 5]);
    expect(new Linear(5, 3, { bias: false }).bias).toBeNull();
  });

  it('Conv1d/2d/3d and ConvTranspose1d/2d', () => {
    const c1 = new Conv1d(2, 4, 3, { stride: 2, padding: 1, generator: g() });
    const x1 = randn([2, 2, 9], { generator: g() });
    same(c1.call(x1), T.conv1d(x1, c1.weight, c1.bias, { stride: 2, padding: 1 }));
    const c2 = new Conv2d(4, 6, [3, 1], { padding: 'same', groups: 2, dilation: [1, 1], generator: g() });
    expect(c2.weight.shape).toEqual([6, 2, 3, 1]);
    const x2 = randn([2, 4, 5, 5], { generator: g() });
    same(c2.call(x2), T.conv2d(x2, c2.weight, c2.bias, { padding: 'same', groups: 2 }));
    const c3 = new Conv3d(1, 2, 2, { bias: false, generator: g() });
    const x3 = randn([1, 1, 3, 3, 3], { generator: g() });
    same(c3.call(x3), T.conv3d(x3, c3.weight, null));
    const t2 = new ConvTranspose2d(4, 2, 3, { stride: 2, padding: 1, outputPadding: 1, generator: g() });
    expect(t2.weight.shape).toEqual([4, 2, 3, 3]);
    same(t2.call(x2), T.convTranspose2d(x2, t2.weight, t2.bias, { stride: 2, padding: 1, outputPadding: 1 }));
    expect(t2.call(x2).shape).toEqual([2, 2, 10, 10]);
    const t1 = new ConvTranspose1d(2, 3, 2, { generator: g() });
    same(t1.call(x1), T.convTranspose1d(x1, t1.weight, t1.bias));
  });

  it('activations', () => {
    const x = randn([3, 4, 2], { generator: g() }).mul(3);
    const cases: [Module, Tensor][] = [
      [new act.ReLU(), T.relu(x)],
      [new act.ReLU6(), T.relu6(x)],
      [new act.Hardtanh({ minVal: -2, maxVal: 0.5 }), T.clamp(x, -2, 0.5)],
      [new act.LeakyReLU(0.2), T.leakyRelu(x, 0.2)],
      [new act.LeakyReLU({ negativeSlope: 0.3 }), T.leakyRelu(x, 0.3)],
      [new act.Sigmoid(), T.sigmoid(x)],
      [new act.Tanh(), T.tanh(x)],
      [new act.SiLU(), T.silu(x)],
      [new act.GELU(), T.gelu(x)],
      [new act.GELU({ approximate: 'tanh' }), T.gelu(x, { approximate: 'tanh' })],
      [new act.Hardsigmoid(), T.hardsigmoid(x)],
      [new act.Hardswish(), T.hardswish(x)],
      [new act.ELU(0.5), T.elu(x, 0.5)],
      [new act.SELU(), T.selu(x)],
      [new act.Softplus({ beta: 2, threshold: 5 }), T.softplus(x, 2, 5)],
      [new act.Softmax(1), T.softmax(x, 1)],
      [new act.Softmax(), T.softmax(x, -1)],
      [new act.LogSoftmax({ dim: 0 }), T.logSoftmax(x, 0)],
    ];
    for (const [m, expected] of cases) same((m as Module & { call(x: Tensor): Tensor }).call(x), expected);
    const p = new act.PReLU({ numParameters: 4, init: 0.1 });
    expect(p.weight.toArray().map((v) => +v.toFixed(6))).toEqual([0.1, 0.1, 0.1, 0.1]);
    same(p.call(x), T.prelu(x, p.weight));
    expect(p.parameters()).toEqual([p.weight]);
  });

  it('pooling, upsample, flatten, identity', () => {
    const x = randn([2, 3, 7, 6], { generator: g() });
    same(new MaxPool2d(3, { stride: 2, padding: 1 }).call(x), T.maxPool2d(x, 3, { stride: 2, padding: 1 }));
    same(new MaxPool2d([2, 3], { ceilMode: true }).call(x), T.maxPool2d(x, [2, 3], { stride: [2, 3], ceilMode: true }));
    same(
      new AvgPool2d(2, { countIncludePad: false, padding: 1 }).call(x),
      T.avgPool2d(x, 2, { stride: 2, padding: 1, countIncludePad: false }),
    );
    same(new AdaptiveAvgPool2d(1).call(x), T.adaptiveAvgPool2d(x, 1));
    same(new AdaptiveAvgPool2d([2, null]).call(x), T.adaptiveAvgPool2d(x, [2, null]));
    same(new Upsample({ scaleFactor: 2 }).call(x), T.interpolate(x, { scaleFactor: 2 }));
    same(
      new Upsample({ size: [5, 4], mode: 'bilinear', alignCorners: true }).call(x),
      T.interpolate(x, { size: [5, 4], mode: 'bilinear', alignCorners: true }),
    );
    expect(new Flatten().call(x).shape).toEqual([2, 126]);
    expect(new Flatten({ startDim: 2 }).call(x).shape).toEqual([2, 3, 42]);
    expect(new Identity().call(x)).toBe(x);
  });

  it('LayerNorm', () => {
    const m = new LayerNorm([3, 2]);
    m.weight!.data.set([1, 2, 3, 4, 5, 6]);
    m.bias!.data.set([0, 1, 0, 1, 0, 1]);
    const x = randn([4, 3, 2], { generator: g() });
    same(m.call(x), T.layerNorm(x, [3, 2], m.weight, m.bias, 1e-5));
    const plain = new LayerNorm(2, { elementwiseAffine: false, eps: 1e-3 });
    expect(plain.parameters()).toEqual([]);
    same(plain.call(x), T.layerNorm(x, [2], null, null, 1e-3));
  });

  it('functional namespace', () => {
    const x = randn([2, 3], { generator: g() });
    same(F.relu(x), T.relu(x));
    same(F.hardtanh(x, -0.5, 0.5), T.clamp(x, -0.5, 0.5));
    same(F.dropout(x, 0.5, false), x);
    expect(typeof F.conv2d).toBe('function');
    expect(typeof F.crossEntropy).toBe('function');
  });
});

describe('BatchNorm', () => {
  it('training: batch statistics, running stats updated with momentum and unbiased var, counter', () => {
    const bn = new BatchNorm2d(2, { momentum: 0.5 });
    bn.weight!.data.set([2, 3]);
    bn.bias!.data.set([0.5, -1]);
    const x = randn([3, 2, 2, 2], { generator: g() });
    const rm = T.zeros([2]);
    const rv = T.ones([2]);
    const y = bn.call(x);
    same(y, T.batchNorm(x, rm, rv, bn.weight, bn.bias, { training: true, momentum: 0.5, eps: 1e-5 }));
    expect(bn.runningMean!.toArray()).toEqual(rm.toArray());
    expect(bn.runningVar!.toArray()).toEqual(rv.toArray());
    // Hand check of channel 0's running mean: 0.5 * batch mean.
    const v = x.toArray();
    let s = 0;
    for (let n = 0; n < 3; n++) for (let k = 0; k < 4; k++) s += v[n * 8 + k]!;
    expect(bn.runningMean!.at(0)).toBeCloseTo(0.5 * (s / 12), 6);
    expect(bn.numBatchesTracked!.item()).toBe(1);
    bn.call(x);
    expect(bn.numBatchesTracked!.item()).toBe(2);
  });

  it('eval uses running stats; momentum null is a cumulative average; no tracking uses batch stats', () => {
    const bn = new BatchNorm1d(3, { momentum: null });
    const a = randn([8, 3], { generator: g() });
    const b = randn([8, 3], { generator: new Generator(9) });
    bn.call(a);
    bn.call(b);
    const mean = (t: Tensor) => t.mean(0).toArray();
    const ma = mean(a);
    const mb = mean(b);
    bn.runningMean!.toArray().forEach((v, i) => {
      expect(v).toBeCloseTo((ma[i]! + mb[i]!) / 2, 5);
    });
    bn.eval();
    same(bn.call(a), T.batchNorm(a, bn.runningMean, bn.runningVar, bn.weight, bn.bias, { eps: 1e-5 }));
    const free = new BatchNorm3d(2, { trackRunningStats: false, affine: false });
    expect(free.stateDict().tensors).toEqual({});
    free.eval();
    const x = randn([2, 2, 2, 2, 2], { generator: g() });
    same(free.call(x), T.batchNorm(x, null, null, null, null, { training: true }));
  });

  it.each([
    ['BatchNorm2d', () => new BatchNorm2d(4)],
    ['SyncBatchNorm', () => new SyncBatchNorm(3)],
  ])('%s: the state dict includes running stats and numBatchesTracked', (_, make) => {
    expect(Object.keys(make().stateDict().tensors)).toEqual([
      'weight',
      'bias',
      'runningMean',
      'runningVar',
      'numBatchesTracked',
    ]);
  });

  it('input checks name the layer', () => {
    const bn = new BatchNorm2d(4);
    expect(() => bn.call(randn([2, 4]))).toThrow(/BatchNorm2d: expected 4-d input/);
    expect(() => bn.call(randn([2, 3, 2, 2]))).toThrow(/BatchNorm2d: input has 3 channels/);
  });
});

describe('default initialisation', () => {
  it('kaiming-uniform(a=√5) weights and biases lie in ±1/√fan_in and fill the range', () => {
    const lin = new Linear(64, 256, { generator: new Generator(1) });
    const conv = new Conv2d(8, 32, 3, { generator: new Generator(2) });
    const convT = new ConvTranspose2d(32, 16, 3, { groups: 2, generator: new Generator(3) });
    for (const [w, b, fanIn] of [
      [lin.weight, lin.bias!, 64],
      [conv.weight, conv.bias!, 8 * 9],
      [convT.weight, convT.bias!, 8 * 9], // PyTorch's fan_in for ConvTranspose is weight.size(1)·k·k
    ] as const) {
      const bound = 1 / Math.sqrt(fanIn);
      for (const t of [w, b]) {
        const v = t.toArray();
        expect(Math.max(...v.map(Math.abs))).toBeLessThanOrEqual(bound);
      }
      const v = w.toArray();
      const mean = v.reduce((s, x) => s + x, 0) / v.length;
      const variance = v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length;
      // U(-b, b): mean 0, variance b²/3, extremes near ±b.
      expect(Math.abs(mean)).toBeLessThan(0.05 * bound * 4);
      expect(variance).toBeGreaterThan((0.9 * (bound * bound)) / 3);
      expect(variance).toBeLessThan((1.1 * (bound * bound)) / 3);
      expect(Math.max(...v)).toBeGreaterThan(0.95 * bound);
    }
  });

  it('is reproducible from a seed and from the reseeded default generator', () => {
    expect(new Linear(3, 3, { generator: new Generator(5) }).weight.toArray()).toEqual(
      new Linear(3, 3, { generator: new Generator(5) }).weight.toArray(),
    );
    T.manualSeed(11);
    const a = new Linear(3, 3).weight.toArray();
    T.manualSeed(11);
    expect(new Linear(3, 3).weight.toArray()).toEqual(a);
  });
});

describe('Dropout', () => {
  it('zeroes about p of the elements, scales the rest, is seeded, identity in eval', () => {
    const x = T.ones([1000]);
    const d = new Dropout({ p: 0.3, seed: 4 });
    const y = d.call(x).toArray();
    const zeros = y.filter((v) => v === 0).length;
    expect(zeros).toBeGreaterThan(250);
    expect(zeros).toBeLessThan(350);
    y.filter((v) => v !== 0).forEach((v) => {
      expect(v).toBeCloseTo(1 / 0.7, 6);
    });
    expect(new Dropout({ p: 0.3, seed: 4 }).call(x).toArray()).toEqual(y);
    expect(d.call(x).toArray()).not.toEqual(y);
    d.eval();
    expect(d.call(x)).toBe(x);
    expect(
      new Dropout(1)
        .call(x)
        .toArray()
        .every((v) => v === 0),
    ).toBe(true);
  });

  it('passes gradients through the mask', () => {
    const x = T.ones([6], { requiresGrad: true });
    const y = new Dropout({ p: 0.5, seed: 1 }).call(x);
    y.sum().backward();
    expect(x.grad!.toArray()).toEqual(y.toArray());
  });
});

describe('option validation names the layer and the field', () => {
  it.each([
    [() => new Conv2d(3, 4, 0), /Conv2d: invalid options: kernelSize/],
    [
      () => new Conv2d(3, 4, 3, { groups: 2 }),
      /Conv2d: invalid options: groups: inChannels \(3\) must be divisible by groups \(2\)/,
    ],
    [() => new Conv2d(3, 4, 3, { stride: 2, padding: 'same' }), /padding: padding 'same' needs stride 1/],
    [() => new Conv2d(3, 4, 3, { strid: 2 } as never), /Unrecognized key\(s\) in object: 'strid'/],
    [() => new Linear(-1, 2), /Linear: invalid options: inFeatures/],
    [() => new BatchNorm2d(4, { momentum: 2 }), /BatchNorm2d: invalid options: momentum/],
    [() => new Dropout({ p: 1.5 }), /Dropout: invalid options: p/],
    [() => new Upsample({}), /Upsample: invalid options: size: give exactly one of size and scaleFactor/],
    [() => new MaxPool2d(2, { padding: 2 }), /MaxPool2d: invalid options: padding/],
    [() => new act.Softplus({ beta: 0 }), /Softplus: invalid options: beta/],
  ])('%#', (make, message) => {
    expect(make).toThrow(message);
  });
});

describe('Sequential', () => {
  it('chains calls (through hooks) and names children 0..n-1', () => {
    const seq = new Sequential(
      new Linear(2, 3, { generator: g() }),
      new act.ReLU(),
      new Linear(3, 1, { generator: g() }),
    );
    const x = tensor([[1, -1]]);
    const manual = (seq.at(2) as Linear).call((seq.at(1) as act.ReLU).call((seq.at(0) as Linear).call(x)));
    same(seq.call(x), manual);
    const seen: string[] = [];
    for (const [name, m] of seq.namedChildren()) m.registerForwardHook(() => void seen.push(name));
    seq.call(x);
    expect(seen).toEqual(['0', '1', '2']);
    expect(seq.toString()).toContain('(1): ReLU()');
  });
});
