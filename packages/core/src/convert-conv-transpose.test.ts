import { getDefaultQatQconfig } from '@qtk/fake-quant';
import { FixedConv } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { ConvTranspose2d, DeQuantStub, Module, QuantStub } from '@qtk/nn';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { calibrate, convertFx, prepareQatFx } from './index.js';

class GroupedUp extends Module {
  readonly quant = new QuantStub();
  readonly up: ConvTranspose2d;
  readonly dequant = new DeQuantStub();
  constructor(g: Generator) {
    super();
    this.up = new ConvTranspose2d(4, 6, 3, { stride: 2, padding: 1, outputPadding: 1, groups: 2, generator: g });
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.up.call(this.quant.call(x)));
  }
}

const run = (m: GraphModule, x: Tensor): Float32Array =>
  Float32Array.from((noGrad(() => m.call(x)) as Tensor).values());

describe.each(['bayes', 'bernoulli2'])('convertFx of a grouped ConvTranspose2d (%s)', (march) => {
  it('uses weight scale o for output channel g·Cout/groups + o and stays within a step of the QAT model', () => {
    const g = new Generator(11);
    const model = new GroupedUp(g);
    model.eval();
    const qat = prepareQatFx(
      model,
      { global: getDefaultQatQconfig({ dtype: 'qint8' }) },
      { march, onWarning: () => {} },
    );
    const x = rand([2, 4, 5, 5], { generator: g }).mul(2).sub(1);
    calibrate(qat, [x]);
    const fixed = convertFx(qat, { march, onWarning: () => {} });
    const conv = fixed.namedModules().find(([, m]) => m instanceof FixedConv)![1] as FixedConv;
    expect(conv.outChannels).toBe(6);
    const fake = run(qat, x);
    const out = run(fixed, x);
    const step = conv.config.outScale[0]!;
    let maxDiff = 0;
    for (let i = 0; i < fake.length; i++) maxDiff = Math.max(maxDiff, Math.abs(fake[i]! - out[i]!));
    expect(maxDiff).toBeLessThanOrEqual(step * 1.01);
  });
});
