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
  Sequential,
} from '@qtk/nn';
import type { Generator, Tensor } from '@qtk/tensor';

export interface ReferenceNetOptions {
  /** Seeded generator for the initial weights. */
  generator?: Generator;
  /** Fixed scale of the input QuantStub; inputs in [-1, 1] suit 1/128. */
  inputScale?: number;
}

function conv3x3(cin: number, cout: number, stride: number, generator?: Generator): Conv2d {
  return new Conv2d(cin, cout, 3, { stride, padding: 1, bias: false, generator });
}

/** Residual block of the reference network: conv-bn-relu, conv-bn, shortcut, add, relu. */
export class Block extends Module {
  readonly conv1: Conv2d;
  readonly bn1: BatchNorm2d;
  readonly relu1 = new ReLU();
  readonly conv2: Conv2d;
  readonly bn2: BatchNorm2d;
  readonly short: Sequential | null;
  readonly relu2 = new ReLU();

  constructor(cin: number, cout: number, stride: number, generator?: Generator) {
    super();
    this.conv1 = conv3x3(cin, cout, stride, generator);
    this.bn1 = new BatchNorm2d(cout);
    this.conv2 = conv3x3(cout, cout, 1, generator);
    this.bn2 = new BatchNorm2d(cout);
    this.short =
      stride !== 1 || cin !== cout
        ? new Sequential(new Conv2d(cin, cout, 1, { stride, bias: false, generator }), new BatchNorm2d(cout))
        : null;
  }

  forward(x: Tensor): Tensor {
    let y = this.relu1.call(this.bn1.call(this.conv1.call(x)));
    y = this.bn2.call(this.conv2.call(y));
    const s = this.short ? this.short.call(x) : x;
    return this.relu2.call(y.add(s));
  }
}

/**
 * The benchmark's ResNet-style Fashion-MNIST classifier (benchmark.md): 77,754 parameters,
 * about 9.3M multiply-accumulates per 28×28 image. QuantStub before the stem and DeQuantStub after
 * the Linear are pass-throughs until the model is prepared for quantization.
 */
export class ReferenceNet extends Module {
  readonly quant: QuantStub;
  readonly stem: Sequential;
  readonly layer1: Block;
  readonly layer2: Block;
  readonly layer3: Block;
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten({ startDim: 1 });
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();

  constructor(options: ReferenceNetOptions = {}) {
    super();
    const g = options.generator;
    this.quant = new QuantStub({ scale: options.inputScale ?? 1 / 128 });
    this.stem = new Sequential(conv3x3(1, 16, 1, g), new BatchNorm2d(16), new ReLU());
    this.layer1 = new Block(16, 16, 1, g);
    this.layer2 = new Block(16, 32, 2, g);
    this.layer3 = new Block(32, 64, 2, g);
    this.fc = new Linear(64, 10, { generator: g });
  }

  forward(x: Tensor): Tensor {
    let y = this.stem.call(this.quant.call(x));
    y = this.layer3.call(this.layer2.call(this.layer1.call(y)));
    y = this.flatten.call(this.pool.call(y));
    return this.dequant.call(this.fc.call(y));
  }
}
