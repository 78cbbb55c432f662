// Small models the model-file tests (round trips, config validation, config fuzzing) save and load.
import * as nn from '@qtk/nn';
import { Generator, type Tensor } from '@qtk/tensor';

/** QuantStub → conv + bn + relu → global pool → linear → DeQuantStub, on [N, 2, H, W]. */
export class ConvClassifier extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly conv = new nn.Conv2d(2, 4, 3, { padding: 1, generator: new Generator(1) });
  readonly bn = new nn.BatchNorm2d(4);
  readonly relu = new nn.ReLU();
  readonly gap = new nn.AdaptiveAvgPool2d(1);
  readonly flatten = new nn.Flatten({ startDim: 1 });
  readonly fc = new nn.Linear(4, 3, { generator: new Generator(2) });
  readonly dequant = new nn.DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(
      this.fc.call(this.flatten.call(this.gap.call(this.relu.call(this.bn.call(this.conv.call(this.quant.call(x))))))),
    );
  }
}

/** LayerNorm then Softmax over the last axis of size 6: bayes runs both as composites. */
export class LayerNormSoftmax extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly norm = new nn.LayerNorm([6]);
  readonly soft = new nn.Softmax({ dim: -1 });
  readonly dequant = new nn.DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.soft.call(this.norm.call(this.quant.call(x))));
  }
}
