// quant → conv-bn-relu → conv (→ sigmoid) + skip from the first block → pool → linear → dequant: the calibration
// and ONNX-visualisation tests' network, with their own input channels, sigmoid or not, and seeds.
import {
  AdaptiveAvgPool2d,
  BatchNorm2d,
  Conv2d,
  DeQuantStub,
  Flatten,
  Linear,
  Module,
  QuantStub,
  ReLU,
  Sigmoid,
} from '@qtk/nn';
import type { Generator, Tensor } from '@qtk/tensor';

export interface ConvSkipNetOptions {
  generator: Generator;
  inChannels: number;
  /** A Sigmoid (a table op on bayes) on the second conv's output, before the add; default false. */
  sigmoid?: boolean;
}

/**
 * 4 channels, 3 classes: quant → conv-bn-relu (`a`) → conv → optional sigmoid → add `a` → global average pool →
 * flatten → linear → dequant. The generator draws conv1, conv2, then fc.
 */
export class ConvSkipNet extends Module {
  readonly quant = new QuantStub();
  readonly conv1: Conv2d;
  readonly bn1 = new BatchNorm2d(4);
  readonly relu1 = new ReLU();
  readonly conv2: Conv2d;
  declare readonly sig?: Sigmoid;
  declare readonly pool: AdaptiveAvgPool2d;
  declare readonly flatten: Flatten;
  declare readonly fc: Linear;
  declare readonly dequant: DeQuantStub;

  constructor(o: ConvSkipNetOptions) {
    super();
    const generator = o.generator;
    this.conv1 = new Conv2d(o.inChannels, 4, 3, { padding: 1, generator });
    this.conv2 = new Conv2d(4, 4, 3, { padding: 1, generator });
    if (o.sigmoid) this.setChild('sig', new Sigmoid());
    this.setChild('pool', new AdaptiveAvgPool2d(1));
    this.setChild('flatten', new Flatten({ startDim: 1 }));
    this.setChild('fc', new Linear(4, 3, { generator }));
    this.setChild('dequant', new DeQuantStub());
  }

  forward(x: Tensor): Tensor {
    const a = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    const conv = this.conv2.call(a);
    const b = (this.sig ? this.sig.call(conv) : conv).add(a);
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(b))));
  }
}
