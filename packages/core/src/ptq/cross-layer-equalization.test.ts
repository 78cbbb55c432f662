// Cross-layer equalization: the float outputs stay the same, the paired weight ranges become equal, and per-tensor
// weight quantization of a network with unbalanced channels loses far less.
import { getDefaultQconfig } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import { type GraphModule, subAt } from '@qtk/ir';
import { BatchNorm2d, Conv2d, DeQuantStub, Module, QuantStub, ReLU, ReLU6 } from '@qtk/nn';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { calibrate, prepareQatFx, setFakeQuantize } from '../index.js';
import { equalizeCrossLayer } from './cross-layer-equalization.js';

/** conv-bn-relu → depthwise conv-relu → 1×1 conv → ReLU6 → 1×1 conv, with channels 1000× apart in scale. */
class Unbalanced extends Module {
  readonly quant = new QuantStub();
  readonly conv1 = new Conv2d(3, 8, 3, { padding: 1, generator: new Generator(1) });
  readonly bn1 = new BatchNorm2d(8);
  readonly relu1 = new ReLU();
  readonly dw = new Conv2d(8, 8, 3, { padding: 1, groups: 8, generator: new Generator(2) });
  readonly relu2 = new ReLU();
  readonly pw = new Conv2d(8, 4, 1, { generator: new Generator(3) });
  readonly relu6 = new ReLU6();
  readonly head = new Conv2d(4, 2, 1, { generator: new Generator(4) });
  readonly dequant = new DeQuantStub();
  constructor() {
    super();
    // channel i of conv1 scaled by 10^k_i and of the depthwise conv by 10^-k_i: the same float function, the
    // reciprocal ranges BatchNorm folding leaves in real networks
    const k = (ch: number) => (ch % 4) - 2;
    const w1 = this.conv1.weight.values();
    for (let i = 0; i < w1.length; i++) w1[i] = w1[i]! * 10 ** k(Math.floor(i / (w1.length / 8)));
    const wd = this.dw.weight.values();
    for (let i = 0; i < wd.length; i++) wd[i] = wd[i]! * 10 ** -k(Math.floor(i / (wd.length / 8)));
  }
  forward(x: Tensor): Tensor {
    let y = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    y = this.pw.call(this.relu2.call(this.dw.call(y)));
    return this.dequant.call(this.head.call(this.relu6.call(y)));
  }
}

const x = rand([4, 3, 8, 8], { low: -1, high: 1, generator: new Generator(9) });

function channelRanges(w: Tensor, axis: 0 | 1): number[] {
  const [o, i] = [w.shape[0]!, w.shape[1]!];
  const k = w.size / (o * i);
  const r = new Array<number>(axis === 0 ? o : i).fill(0);
  const v = w.values();
  for (let a = 0; a < o; a++)
    for (let b = 0; b < i; b++)
      for (let t = 0; t < k; t++) {
        const c = axis === 0 ? a : b;
        r[c] = Math.max(r[c]!, Math.abs(v[(a * i + b) * k + t]!));
      }
  return r;
}

/** SQNR (dB) of the model's output with per-tensor int8 weights (and int8 activations) against its float output. */
function perTensorSqnr(model: Module, want: Tensor): number {
  const qconfig = getDefaultQconfig({ weightQkwargs: { chAxis: -1 } });
  const gm = prepareQatFx(model, { global: qconfig }, { march: 'bayes', onWarning: () => {} });
  calibrate(gm, [x], { onWarning: () => {} });
  setFakeQuantize(gm, 'VALIDATION');
  const y = noGrad(() => gm.call(x) as Tensor).values();
  const w = want.values();
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < w.length; i++) {
    signal += w[i]! ** 2;
    noise += (y[i]! - w[i]!) ** 2;
  }
  return 10 * Math.log10(signal / noise);
}

describe('equalizeCrossLayer', () => {
  it('keeps the float outputs, equalizes each pair joined by a ReLU (depthwise too), and leaves ReLU6 pairs', () => {
    const float = new Unbalanced().eval();
    const before = noGrad(() => float.call(x) as Tensor);
    const w1Before = Array.from(float.conv1.weight.values());
    const { model, pairs, rounds } = equalizeCrossLayer(float);
    // the model given is not changed
    expect(Array.from(float.conv1.weight.values())).toEqual(w1Before);
    const after = noGrad(() => model.call(x) as Tensor);
    const scale = Math.max(...Array.from(before.values(), Math.abs));
    const worst = Math.max(...Array.from(after.values(), (v, i) => Math.abs(v - before.values()[i]!)));
    expect(worst / scale).toBeLessThan(1e-5);
    // conv1 (fused with bn1 and relu1) → dw (fused with relu2) → pw (fused with relu6); pw → head goes through
    // the ReLU6: left out
    expect(pairs.map((p) => `${p.first}->${p.second}`)).toEqual(['relu1->relu2', 'relu2->relu6']);
    expect(rounds).toBeGreaterThan(1);
    const conv = (name: string) => {
      const m = subAt(model as GraphModule, name) as unknown as { conv?: Conv2d } & Conv2d;
      return (m.conv ?? m).weight;
    };
    // at the fixed point each channel's range is the same on both sides of the pair
    const [a, b] = [channelRanges(conv('relu1'), 0), channelRanges(conv('relu2'), 0)];
    for (const [i, r] of a.entries()) expect(r / b[i]!).toBeCloseTo(1, 2);
  });

  it('per-tensor int8 weights lose far less after it', () => {
    const float = new Unbalanced().eval();
    const want = noGrad(() => float.call(x) as Tensor);
    const plain = perTensorSqnr(new Unbalanced().eval(), want);
    const equalized = perTensorSqnr(equalizeCrossLayer(float).model, want);
    expect(equalized).toBeGreaterThan(plain + 10);
  });
});
