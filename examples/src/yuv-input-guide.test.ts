// docs/yuv-input.md's code block (convert, insertYuvInput, run on centered YUV bytes) runs as written on a
// small calibrated RGB model, so the guide cannot drift from the API.
import { Quantize, YuvInputQuantize } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { centeredYuv2Rgb, noGrad, rgb2CenteredYuv, type Tensor, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { blockSuite, firstTsBlock, readRepoFile } from './testing/doc-blocks.js';

const guide = readRepoFile('docs/yuv-input.md');

/** What the block expects to exist: a calibrated QAT model trained on normalized RGB, and RGB images. */
const PRELUDE = `
import { calibrate, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import { Conv2d, DeQuantStub, Flatten, Linear, AdaptiveAvgPool2d, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, rand, tensor, type Tensor } from '@qtk/tensor';
class Net extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(3, 6, 3, { padding: 1, generator: new Generator(1) });
  readonly relu = new ReLU();
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten({ startDim: 1 });
  readonly fc = new Linear(6, 10, { generator: new Generator(2) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(this.relu.call(this.conv.call(this.quant.call(x)))))));
  }
}
const normalize = (rgb: Tensor) =>
  rgb.div(255).sub(tensor([0.485, 0.456, 0.406], [1, 3, 1, 1])).div(tensor([0.229, 0.224, 0.225], [1, 3, 1, 1]));
const g = new Generator(3);
const rgbImages = rand([16, 3, 6, 6], { low: 0, high: 256, generator: g }).floor();
const calibrated = prepareQatFx(new Net().eval(), { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } }, { march: 'bayes' });
calibrate(calibrated, [normalize(rand([16, 3, 6, 6], { low: 0, high: 256, generator: g }).floor())]);
`;

const { importBlock } = blockSuite('.yuv-input-guide-');

describe('docs/yuv-input.md', () => {
  it('the insertYuvInput block runs, and its YUV model gives the RGB model fed the same pixels', async () => {
    const block = firstTsBlock(guide, 'docs/yuv-input.md', '## insertYuvInput');
    const flow = await importBlock<{
      fixed: GraphModule;
      deployed: GraphModule;
      logits: Tensor;
      rgbImages: Tensor;
    }>('flow.ts', `${PRELUDE}\n${block}\nexport { fixed, deployed, logits, rgbImages };\n`);
    expect(flow.deployed.getSubmodule('quant')).toBeInstanceOf(YuvInputQuantize);
    expect(flow.fixed.getSubmodule('quant')).toBeInstanceOf(Quantize);
    expect(flow.logits.shape).toEqual([16, 10]);
    const rgb = centeredYuv2Rgb(rgb2CenteredYuv(flow.rgbImages, 'full'), 'full');
    const normalized = rgb
      .div(255)
      .sub(tensor([0.485, 0.456, 0.406], [1, 3, 1, 1]))
      .div(tensor([0.229, 0.224, 0.225], [1, 3, 1, 1]));
    const viaRgb = noGrad(() => flow.fixed.call(normalized)) as Tensor;
    expect(Array.from(flow.logits.values())).toEqual(Array.from(viaRgb.values()));
  });
});
