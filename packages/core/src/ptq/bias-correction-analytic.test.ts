// The analytic bias correction: the Gaussian expectations against their closed forms, and on a conv → BN → ReLU →
// conv net whose BatchNorm statistics are those of its data, corrections that agree with the empirical form's and
// remove most of the quantized weight's mean output error, with no data run.
import { getDefaultQconfig } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import type { GraphModule } from '@qtk/ir';
import { BatchNorm2d, Conv2d, DeQuantStub, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import {
  calibrate,
  prepareQatFx,
  type QatModule,
  quantizePostTraining,
  setFakeQuantize,
  weightedLayer,
} from '../index.js';
import { correctBias } from './bias-correction.js';
import { correctBiasAnalytic, gaussianExpectation } from './bias-correction-analytic.js';

const phi = (z: number) => Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
// Φ by Simpson's rule on [−10, z]: independent of the quadrature under test
function normalCdf(z: number): number {
  const a = -10;
  const n = 20000;
  const h = (z - a) / n;
  let s = phi(a) + phi(z);
  for (let i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * phi(a + i * h);
  return (s * h) / 3;
}
/** E[max(0, y − c)] for y ~ N(m, s²), in closed form. */
const reluAbove = (m: number, s: number, c: number) => (m - c) * normalCdf((m - c) / s) + s * phi((m - c) / s);

describe('gaussianExpectation', () => {
  it('matches the closed forms of ReLU, ReLU6 and the identity', () => {
    for (const [m, s] of [
      [0, 1],
      [-1.5, 0.7],
      [2, 3],
      [5.5, 0.4],
      [0.3, 0.05],
    ] as const) {
      expect(gaussianExpectation((y) => Math.max(0, y), m, s)).toBeCloseTo(reluAbove(m, s, 0), 5);
      const relu6 = (y: number) => Math.min(6, Math.max(0, y));
      expect(gaussianExpectation(relu6, m, s)).toBeCloseTo(reluAbove(m, s, 0) - reluAbove(m, s, 6), 5);
      expect(gaussianExpectation((y) => y, m, s)).toBeCloseTo(m, 6);
    }
    expect(gaussianExpectation((y) => Math.max(0, y), -2, 0)).toBe(0);
  });
});

class ConvBnNet extends Module {
  readonly quant = new QuantStub();
  readonly conv1 = new Conv2d(4, 16, 3, { padding: 1, bias: false, generator: new Generator(3) });
  readonly bn = new BatchNorm2d(16);
  readonly relu = new ReLU();
  readonly conv2 = new Conv2d(16, 8, 1, { generator: new Generator(4) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.conv2.call(this.relu.call(this.bn.call(this.conv1.call(this.quant.call(x))))));
  }
}

const batches = Array.from({ length: 4 }, (_, i) => rand([8, 4, 8, 8], { generator: new Generator(20 + i) }));

/** The net with its BatchNorm's running statistics set to conv1's output over the batches, and spread γ, β. */
function floatNet(): ConvBnNet {
  const net = new ConvBnNet().eval();
  const sums = new Float64Array(16);
  const squares = new Float64Array(16);
  let count = 0;
  noGrad(() => {
    for (const x of batches) {
      const v = net.conv1.call(x).values();
      const inner = 64;
      for (let i = 0; i < v.length; i++) {
        const c = Math.floor(i / inner) % 16;
        sums[c]! += v[i]!;
        squares[c]! += v[i]! * v[i]!;
      }
      count += x.shape[0]! * inner;
    }
  });
  net.bn.runningMean!.values().set(sums.map((s) => s / count));
  net.bn.runningVar!.values().set(squares.map((q, c) => q / count - (sums[c]! / count) ** 2));
  net.bn.weight!.values().set(Array.from({ length: 16 }, (_, c) => 0.5 + (c % 5) * 0.4));
  net.bn.bias!.values().set(Array.from({ length: 16 }, (_, c) => -1 + (c % 7) * 0.4));
  return net;
}

// per-tensor weights: the weight error's mean effect is large
const perTensor = getDefaultQconfig({ weightQkwargs: { chAxis: -1 } });

function calibrated(float: ConvBnNet): GraphModule {
  const gm = prepareQatFx(float, { global: perTensor }, { march: 'bayes', onWarning: () => {} });
  calibrate(gm, batches, { onWarning: () => {} });
  setFakeQuantize(gm, 'VALIDATION');
  return gm;
}

const biasOf = (gm: GraphModule, name: string) =>
  Array.from(weightedLayer((gm.getSubmodule(name) as QatModule).module)!.layer.bias!.values() as Float32Array);

describe('correctBiasAnalytic', () => {
  it("derives conv2's input means from the BatchNorm: its correction agrees with the empirical one", () => {
    const float = floatNet();
    const empirical = calibrated(float);
    const analytic = calibrated(float);
    const before = biasOf(analytic, 'conv2');

    const e = correctBias(empirical, batches);
    const a = correctBiasAnalytic(analytic);
    expect(a.samples).toBe(0);
    expect(a.layers.map((l) => l.name)).toEqual(['conv2']);
    // conv1 (fused with BN and ReLU: node 'relu') is fed by the model input
    expect(a.skipped).toEqual([{ name: 'relu', reason: expect.stringMatching(/model input 'x'/) }]);

    const eDelta = biasOf(empirical, 'conv2').map((b, o) => b - before[o]!);
    const aDelta = biasOf(analytic, 'conv2').map((b, o) => b - before[o]!);
    const largest = Math.max(...eDelta.map(Math.abs));
    expect(largest).toBeGreaterThan(1e-3);
    // the pre-activations are near Gaussian (sums of 36 uniform products): the two agree within a tenth of the largest
    for (const [o, d] of eDelta.entries()) expect(Math.abs(aDelta[o]! - d)).toBeLessThan(0.1 * largest);
    expect(e.layers.find((l) => l.name === 'conv2')!.maxAbs).toBeCloseTo(a.layers[0]!.maxAbs, 1);
    // the float model keeps its bias
    expect(Array.from(float.conv2.bias!.values())).toEqual(before);
  });

  it("quantizePostTraining({ biasCorrection: 'analytic' }) runs it and reports what it skipped", () => {
    const r = quantizePostTraining(floatNet(), {
      march: 'bayes',
      qconfig: { global: perTensor },
      calibration: batches,
      biasCorrection: 'analytic',
      onWarning: () => {},
    });
    expect(r.biasCorrection!.layers.map((l) => l.name)).toEqual(['conv2']);
    expect(r.biasCorrection!.skipped!.map((l) => l.name)).toEqual(['relu']);
  });

  it('leaves every layer of a model without BatchNorm as it is, and refuses a model still observing', () => {
    const float = floatNet();
    const gm = prepareQatFx(float, { global: perTensor }, { march: 'bayes', onWarning: () => {} });
    expect(() => correctBiasAnalytic(gm)).toThrow(/fake-quant '.*' is in .*VALIDATION/);
    calibrate(gm, batches, { onWarning: () => {} });
    setFakeQuantize(gm, 'VALIDATION');
    // the same layers with the BatchNorm folded by hand before QTK saw it: nothing to derive from
    const folded = new ConvBnNet().eval();
    const noBn = prepareQatFx(
      new (class extends Module {
        readonly quant = new QuantStub();
        readonly conv1 = folded.conv1;
        readonly relu = new ReLU();
        readonly conv2 = folded.conv2;
        readonly dequant = new DeQuantStub();
        forward(x: Tensor): Tensor {
          return this.dequant.call(this.conv2.call(this.relu.call(this.conv1.call(this.quant.call(x)))));
        }
      })().eval(),
      { global: perTensor },
      { march: 'bayes', onWarning: () => {} },
    );
    calibrate(noBn, batches, { onWarning: () => {} });
    setFakeQuantize(noBn, 'VALIDATION');
    const r = correctBiasAnalytic(noBn);
    expect(r.layers).toEqual([]);
    expect(r.skipped!.find((s) => s.name === 'conv2')!.reason).toMatch(/'relu' .* had no BatchNorm/);
  });
});
