// AdaRound: each layer's learned rounding lowers its output error against the float layer below rounding to
// nearest, the weights land on the calibrated grid (so conversion keeps exactly those integers), and the float
// model keeps its weights.
import { FakeQuantize, getDefaultQconfig } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import type { GraphModule } from '@qtk/ir';
import { Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { calibrate, convertFx, prepareQatFx, type QatModule, setFakeQuantize, weightedLayer } from '../index.js';
import { adaround } from './adaround.js';
import { SoftRounding } from './adaround-rounding.js';

class SmallNet extends Module {
  readonly quant = new QuantStub();
  readonly conv: Conv2d;
  readonly relu = new ReLU();
  readonly flatten = new Flatten();
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();
  constructor() {
    super();
    const g = new Generator(3);
    this.conv = new Conv2d(3, 8, 3, { padding: 1, generator: g });
    this.fc = new Linear(8 * 6 * 6, 5, { generator: g });
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc.call(this.flatten.call(this.relu.call(this.conv.call(this.quant.call(x))))));
  }
}

const batches = Array.from({ length: 4 }, (_, i) => randn([16, 3, 6, 6], { generator: new Generator(20 + i) }));

function calibrated(float: Module): GraphModule {
  const gm = prepareQatFx(float, { global: getDefaultQconfig() }, { march: 'bayes', onWarning: () => {} });
  calibrate(gm, batches, { onWarning: () => {} });
  setFakeQuantize(gm, 'VALIDATION');
  return gm;
}

describe('adaround', () => {
  it('lowers every layer’s output error below nearest rounding, with weights on the calibrated grid', () => {
    const float = new SmallNet().eval();
    const floatWeights = [float.conv.weight.values().slice(), float.fc.weight.values().slice()];
    const gm = calibrated(float);
    const progress: string[] = [];
    const result = adaround(gm, batches, {
      iterations: 300,
      onProgress: (p) => progress.push(`${p.layer}:${p.iteration}`),
    });
    expect(result.samples).toBe(64);
    expect(result.layers.map((l) => l.name)).toEqual(['relu', 'fc']); // the conv is fused with its ReLU
    expect(progress).toEqual(['relu:0', 'relu:100', 'relu:200', 'relu:300', 'fc:0', 'fc:100', 'fc:200', 'fc:300']);
    // the conv sees the (white) network input, where rounding to nearest is already close to the best; the
    // linear layer sees correlated ReLU outputs, where choosing the rounding pays
    const [conv, fc] = result.layers;
    expect(conv!.mseAdaRound).toBeLessThanOrEqual(conv!.mseNearest);
    expect(fc!.mseAdaRound).toBeLessThan(0.6 * fc!.mseNearest);
    for (const l of result.layers) expect(l.flipped).toBeLessThan(l.weights / 5);
    expect(fc!.flipped).toBeGreaterThan(10);
    for (const name of ['relu', 'fc']) {
      const qat = gm.getSubmodule(name) as QatModule;
      const w = weightedLayer(qat.module)!.layer.weight;
      const q = (qat.weightFakeQuant as FakeQuantize).calculateQparams();
      const per = w.size / q.scale.length;
      const v = w.values();
      for (let i = 0; i < v.length; i++) {
        const k = v[i]! / q.scale[Math.floor(i / per)]!;
        expect(Math.abs(k - Math.round(k))).toBeLessThan(1e-3);
        expect(Math.round(k)).toBeGreaterThanOrEqual(q.quantMin);
        expect(Math.round(k)).toBeLessThanOrEqual(q.quantMax);
      }
      // fake-quantizing the rounded weight leaves it where it is
      expect(Array.from(noGrad(() => (qat.weightFakeQuant as FakeQuantize).call(w)).values())).toEqual(Array.from(v));
    }
    expect(float.conv.weight.values()).toEqual(floatWeights[0]);
    expect(float.fc.weight.values()).toEqual(floatWeights[1]);
  });

  it('converts: the fixed-point model stays within one output step of the fake-quantized model', () => {
    const gm = calibrated(new SmallNet().eval());
    adaround(gm, batches, { iterations: 50 });
    const fixed = convertFx(gm, { onWarning: () => {} });
    const x = batches[0]!;
    const fake = noGrad(() => gm.call(x) as Tensor).values();
    const got = (fixed.call(x) as Tensor).values();
    const step = (gm.getSubmodule('fc') as QatModule).activationPostProcess!.calculateQparams().scale[0]!;
    for (let i = 0; i < fake.length; i++) expect(Math.abs(fake[i]! - got[i]!)).toBeLessThanOrEqual(step * 1.01);
  });

  it('refuses a model whose fake-quants still observe, and bad settings', () => {
    const gm = prepareQatFx(
      new SmallNet().eval(),
      { global: getDefaultQconfig() },
      { march: 'bayes', onWarning: () => {} },
    );
    expect(() => adaround(gm, batches)).toThrow(/^adaround: fake-quant '.+' is in (QAT|CALIBRATION)/);
    expect(() => adaround(calibrated(new SmallNet().eval()), batches, { iterations: 0 })).toThrow(
      /iterations must be a positive integer/,
    );
  });
});

describe('SoftRounding', () => {
  it("V's gradient matches finite differences of the loss (reconstruction and regulariser)", () => {
    const g = new Generator(7);
    const w = randn([3, 4], { generator: g }).mul(0.3);
    const fq = new FakeQuantize({
      chAxis: 0,
      numChannels: 3,
      dtype: 'qint8',
      observer: 'min_max',
      state: 'CALIBRATION',
    });
    fq.call(w);
    fq.setFakeQuantState('VALIDATION');
    const patches = randn([1, 6, 4], { generator: g });
    const targets = randn([1, 6, 3], { generator: g });
    const r = new SoftRounding(w, fq);
    const [beta, lambda] = [3, 0.5];
    /** The loss adaround minimises, at the current V, in float64 from the soft weights. */
    const loss = () => {
      const wq = r.soft().values();
      const p = patches.values();
      const t = targets.values();
      let rec = 0;
      for (let m = 0; m < 6; m++)
        for (let o = 0; o < 3; o++) {
          let y = 0;
          for (let j = 0; j < 4; j++) y += p[m * 4 + j]! * wq[o * 4 + j]!;
          rec += (y - t[m * 3 + o]!) ** 2;
        }
      let reg = 0;
      for (const v of r.v.values()) {
        const h = Math.min(1, Math.max(0, (1 / (1 + Math.exp(-v))) * 1.2 - 0.1));
        reg += 1 - Math.abs(2 * h - 1) ** beta;
      }
      return { value: (rec / 18) * 3 + lambda * reg };
    };
    // the analytic gradient, as adaround computes it: (2 · cout / size) · diffᵀ · patches, then backward
    const wq = r.soft().values();
    const gradWeight = new Float64Array(12);
    const p = patches.values();
    const t = targets.values();
    for (let m = 0; m < 6; m++)
      for (let o = 0; o < 3; o++) {
        let y = 0;
        for (let j = 0; j < 4; j++) y += p[m * 4 + j]! * wq[o * 4 + j]!;
        for (let j = 0; j < 4; j++) gradWeight[o * 4 + j]! += ((2 * 3) / 18) * (y - t[m * 3 + o]!) * p[m * 4 + j]!;
      }
    r.backward(gradWeight, beta, lambda);
    const analytic = Array.from(r.v.grad!.values());
    expect(Math.max(...analytic.map(Math.abs))).toBeGreaterThan(0.05);
    const v = r.v.data as Float32Array;
    // a channel's largest weight starts exactly at a clamp's edge (w/s = ±127), where the loss has no derivative
    const interior = [...v.keys()].filter((i) => {
      const h = (1 / (1 + Math.exp(-v[i]!))) * 1.2 - 0.1;
      return h > 1e-3 && h < 1 - 1e-3;
    });
    expect(interior.length).toBeGreaterThanOrEqual(8);
    for (const i of interior) {
      const at = v[i]!;
      const eps = 1e-2;
      v[i] = at + eps;
      const up = loss().value;
      v[i] = at - eps;
      const down = loss().value;
      v[i] = at;
      expect(analytic[i]).toBeCloseTo((up - down) / (2 * eps), 3);
    }
  });
});
