// Small models the model-file tests (round trips, config validation, config fuzzing) save and load.
import {
  AdaptiveAvgPool2d,
  BatchNorm2d,
  Conv2d,
  DeQuantStub,
  Flatten,
  LayerNorm,
  Linear,
  Module,
  QuantStub,
  ReLU,
  Softmax,
} from '@qtk/nn';
import { Generator, type Tensor } from '@qtk/tensor';

/** QuantStub → conv + bn + relu → global pool → linear → DeQuantStub, on [N, 2, H, W]. */
export class ConvClassifier extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(2, 4, 3, { padding: 1, generator: new Generator(1) });
  readonly bn = new BatchNorm2d(4);
  readonly relu = new ReLU();
  readonly gap = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten({ startDim: 1 });
  readonly fc = new Linear(4, 3, { generator: new Generator(2) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(
      this.fc.call(this.flatten.call(this.gap.call(this.relu.call(this.bn.call(this.conv.call(this.quant.call(x))))))),
    );
  }
}

/** LayerNorm then Softmax over the last axis of size 6: bayes runs both as composites. */
export class LayerNormSoftmax extends Module {
  readonly quant = new QuantStub();
  readonly norm = new LayerNorm([6]);
  readonly soft = new Softmax({ dim: -1 });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.soft.call(this.norm.call(this.quant.call(x))));
  }
}
