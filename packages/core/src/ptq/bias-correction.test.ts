// Bias correction: after it, the mean over the calibration data of a layer's output with its quantized weight equals
// the float weight's (for linear layers exactly, up to float rounding); conversion carries the corrected bias.
import { type FakeQuantize, getDefaultQconfig } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import type { GraphModule } from '@qtk/ir';
import { DeQuantStub, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, linear, noGrad, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { calibrate, convertFx, prepareQatFx, type QatModule, setFakeQuantize, weightedLayer } from '../index.js';
import { correctBias } from './bias-correction.js';

class Mlp extends Module {
  readonly quant = new QuantStub();
  readonly fc1 = new Linear(32, 16, { bias: false, generator: new Generator(1) });
  readonly relu = new ReLU();
  readonly fc2 = new Linear(16, 4, { generator: new Generator(2) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc2.call(this.relu.call(this.fc1.call(this.quant.call(x)))));
  }
}

// inputs with a mean far from zero, and per-tensor weights: the weight error's mean effect is large
const batches = Array.from({ length: 4 }, (_, i) => rand([16, 32], { generator: new Generator(10 + i) }));
const perTensor = getDefaultQconfig({ weightQkwargs: { chAxis: -1 } });

function calibrated(float = new Mlp().eval()): GraphModule {
  const gm = prepareQatFx(float, { global: perTensor }, { march: 'bayes', onWarning: () => {} });
  calibrate(gm, batches, { onWarning: () => {} });
  setFakeQuantize(gm, 'VALIDATION');
  return gm;
}

/** Per output: mean over the batches of (the layer with its fake-quantized weight − with its float weight). */
function meanWeightError(gm: GraphModule, name: string): number[] {
  const qat = gm.getSubmodule(name) as QatModule;
  const layer = weightedLayer(qat.module)!.layer as Linear;
  const inputs: Tensor[] = [];
  const h = qat.registerForwardPreHook((_m, args) => {
    inputs.push(args[0] as Tensor);
  });
  noGrad(() => {
    for (const b of batches) gm.call(b);
  });
  h.remove();
  const wq = noGrad(() => (qat.weightFakeQuant as FakeQuantize).call(layer.weight));
  const sums = new Float64Array(layer.outFeatures);
  let rows = 0;
  for (const x of inputs) {
    const d = noGrad(() => linear(x, wq, layer.bias).sub(linear(x, layer.weight, null)));
    const v = d.values();
    for (let i = 0; i < v.length; i++) sums[i % sums.length]! += v[i]!;
    rows += x.shape[0]!;
  }
  // the float layer keeps the bias it had before the correction: compare against the original bias
  return Array.from(sums, (s) => s / rows);
}

describe('correctBias', () => {
  it("removes the quantized weights' mean error from each layer's output, adding a bias where there was none", () => {
    const float = new Mlp().eval();
    const gm = calibrated(float);
    // fc1 is fused with the ReLU after it: the graph node is 'relu'
    const layerAt = (name: string) => weightedLayer((gm.getSubmodule(name) as QatModule).module)!.layer as Linear;
    expect(layerAt('relu').bias).toBeNull();
    const before1 = meanWeightError(gm, 'relu');
    const bias2Before = Array.from(layerAt('fc2').bias!.values());
    expect(Math.max(...before1.map(Math.abs))).toBeGreaterThan(1e-3);

    const result = correctBias(gm, batches);
    // the float model, whose linear layers the prepared one shared, keeps its biases
    expect(float.fc1.bias).toBeNull();
    expect(Array.from(float.fc2.bias!.values())).toEqual(bias2Before);
    const fc1 = layerAt('relu');
    expect(result.samples).toBe(64);
    expect(result.layers.map((l) => l.name)).toEqual(['relu', 'fc2']);
    // fc1: its new bias is exactly the negated mean error (the inputs are the same fake-quantized values)
    expect(fc1.bias).not.toBeNull();
    const bias1 = Array.from(fc1.bias!.values());
    for (const [o, e] of before1.entries()) expect(bias1[o]).toBeCloseTo(-e, 5);
    expect(result.layers[0]!.maxAbs).toBeCloseTo(Math.max(...before1.map(Math.abs)), 5);
    // fc2: measured on its inputs after fc1's correction, its mean error with the corrected bias is the old bias
    const after2 = meanWeightError(gm, 'fc2');
    for (const [o, e] of after2.entries()) expect(e).toBeCloseTo(bias2Before[o]!, 2);
  });

  it('the converted model carries the corrected bias: its mean output error against the float model shrinks', () => {
    const float = new Mlp().eval();
    const meanError = (gm: GraphModule) => {
      const fixed = convertFx(gm);
      let sum = 0;
      let n = 0;
      noGrad(() => {
        for (const b of batches) {
          const y = (fixed.call(b) as Tensor).values();
          const want = (float.call(b) as Tensor).values();
          for (let i = 0; i < y.length; i++) sum += y[i]! - want[i]!;
          n += y.length;
        }
      });
      return Math.abs(sum / n);
    };
    const plain = meanError(calibrated());
    const gm = calibrated();
    correctBias(gm, batches);
    expect(meanError(gm)).toBeLessThan(plain / 2);
  });

  it('refuses a model whose fake-quants still observe', () => {
    const gm = prepareQatFx(new Mlp().eval(), { global: perTensor }, { march: 'bayes', onWarning: () => {} });
    expect(() => correctBias(gm, batches)).toThrow(/^correctBias: fake-quant '.+' is in (QAT|CALIBRATION), so the run/);
  });
});
