// A whole converted model with its input quantize replaced by insertYuvInput exports to integer ONNX
// that takes centered YUV444 int8 and computes QTK's integers at every node in onnxruntime-node.
import '../index.js'; // the QDQ and integer export rules
import { insertYuvInput } from '@qtk/core';
import { centeredYuvInput } from '@qtk/fixed-point';
import { AdaptiveAvgPool2d, BatchNorm2d, Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, rand, rgb2CenteredYuv, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { formatRuntimeComparison } from '../compare-runtime.js';
import { compareWithRuntime } from '../node/compare-with-runtime.js';
import { exportOnnxBytes, DataType, decodeModel } from '@qtk/onnx';
import { fixedPointOf } from '../testing/fixed-models.js';

class RgbNet extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(3, 8, 3, { padding: 1, generator: new Generator(4) });
  readonly bn = new BatchNorm2d(8);
  readonly relu = new ReLU();
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten({ startDim: 1 });
  readonly fc = new Linear(8, 5, { generator: new Generator(5) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const y = this.relu.call(this.bn.call(this.conv.call(this.quant.call(x))));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(y))));
  }
}

const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];
const rgb = (n: number, seed: number) =>
  rand([n, 3, 6, 6], { low: 0, high: 256, generator: new Generator(seed) }).floor();

describe('integer export of a YUV-input model', () => {
  for (const march of ['bayes', 'bernoulli2'])
    for (const swing of ['full', 'studio'] as const)
      test(`${march}, ${swing} swing: int8 YUV in, every node identical in onnxruntime`, async () => {
        const calib = [rgb(8, 1).div(255).sub(0.45).div(0.226)];
        const fixed = fixedPointOf(new RgbNet(), { march, calibration: calib, outModules: ['fc'] });
        const yuvModel = insertYuvInput(fixed, { swing, mean: MEAN, std: STD });
        const x = centeredYuvInput(rgb2CenteredYuv(rgb(4, 2), swing));
        const bytes = exportOnnxBytes(yuvModel, [x]);
        const input = decodeModel(bytes).graph!.input![0]!;
        expect(input.type!.tensor_type!.elem_type).toBe(DataType.INT8);
        const c = await compareWithRuntime(yuvModel, bytes, [x]);
        expect(c.nodes[0]!.op).toBe('YuvInputQuantize');
        expect(formatRuntimeComparison(c)).toBe(`all ${c.nodes.length} compared values identical`);
      });
});
