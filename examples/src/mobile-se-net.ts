import {
  AdaptiveAvgPool2d,
  BatchNorm2d,
  Conv2d,
  DeQuantStub,
  Flatten,
  FloatFunctional,
  Hardswish,
  Linear,
  Module,
  QuantStub,
  ReLU,
  Sequential,
  Sigmoid,
  Tanh,
} from '@qtk/nn';
import type { Generator, Tensor } from '@qtk/tensor';

/** Squeeze-excite: global average, 1x1 conv down, ReLU, 1x1 conv up, sigmoid gate, gate × input. */
export class SqueezeExcite extends Module {
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly reduce: Conv2d;
  readonly relu = new ReLU();
  readonly expand: Conv2d;
  readonly gate = new Sigmoid();
  readonly mul = new FloatFunctional();

  constructor(channels: number, hidden: number, generator?: Generator) {
    super();
    this.reduce = new Conv2d(channels, hidden, 1, { generator });
    this.expand = new Conv2d(hidden, channels, 1, { generator });
  }

  forward(x: Tensor): Tensor {
    const g = this.gate.call(this.expand.call(this.relu.call(this.reduce.call(this.pool.call(x)))));
    return this.mul.mul(x, g);
  }
}

/**
 * MobileNetV3-style inverted residual without the residual: 1x1 expand + BN + hardswish,
 * depthwise 3x3 + BN + hardswish, squeeze-excite, 1x1 project + BN.
 */
export class InvertedBlock extends Module {
  readonly expand: Sequential;
  readonly depthwise: Sequential;
  readonly se: SqueezeExcite;
  readonly project: Sequential;

  constructor(cin: number, hidden: number, cout: number, stride: number, generator?: Generator) {
    super();
    this.expand = new Sequential(
      new Conv2d(cin, hidden, 1, { bias: false, generator }),
      new BatchNorm2d(hidden),
      new Hardswish(),
    );
    this.depthwise = new Sequential(
      new Conv2d(hidden, hidden, 3, { stride, padding: 1, groups: hidden, bias: false, generator }),
      new BatchNorm2d(hidden),
      new Hardswish(),
    );
    this.se = new SqueezeExcite(hidden, Math.max(4, hidden >> 2), generator);
    this.project = new Sequential(new Conv2d(hidden, cout, 1, { bias: false, generator }), new BatchNorm2d(cout));
  }

  forward(x: Tensor): Tensor {
    return this.project.call(this.se.call(this.depthwise.call(this.expand.call(x))));
  }
}

export interface MobileNetOptions {
  generator?: Generator;
  /** Fixed scale of the input QuantStub; inputs in [-1, 1] suit 1/128. */
  inputScale?: number;
}

/**
 * The start both mobile examples share: the input QuantStub (fixed scale), a stride-2 stem (3×3 conv,
 * 1 → 16 channels, BN, hardswish) and two inverted blocks (16→32→24 stride 2, 24→64→32). Subclasses add
 * their layers after these, so the generator draws the weights in the same order and the state-dict paths
 * (`quant`, `stem.*`, `block1.*`, `block2.*`) stay those of the models' weights files.
 */
export abstract class MobileBackbone extends Module {
  readonly quant: QuantStub;
  readonly stem: Sequential;
  readonly block1: InvertedBlock;
  readonly block2: InvertedBlock;
  // The classifier is declared, not defined, here: `addClassifier` sets it after the subclass's own layers, so it
  // comes last among the children and draws its weights last, as before the backbone was shared.
  declare readonly pool: AdaptiveAvgPool2d;
  declare readonly flatten: Flatten;
  declare readonly fc: Linear;
  declare readonly dequant: DeQuantStub;

  constructor(options: MobileNetOptions) {
    super();
    const generator = options.generator;
    this.quant = new QuantStub({ scale: options.inputScale ?? 1 / 128 });
    this.stem = new Sequential(
      new Conv2d(1, 16, 3, { stride: 2, padding: 1, bias: false, generator }),
      new BatchNorm2d(16),
      new Hardswish(),
    );
    this.block1 = new InvertedBlock(16, 32, 24, 2, generator);
    this.block2 = new InvertedBlock(24, 64, 32, 1, generator);
  }

  /** Adds the classifier on 64 feature channels: global average pool, flatten, fc (10), dequant. */
  protected addClassifier(generator?: Generator): void {
    const self = this as { -readonly [K in 'pool' | 'flatten' | 'fc' | 'dequant']: MobileBackbone[K] };
    self.pool = new AdaptiveAvgPool2d(1);
    self.flatten = new Flatten({ startDim: 1 });
    self.fc = new Linear(64, 10, { generator });
    self.dequant = new DeQuantStub();
  }

  /** The class scores of [N, 64, H, W] features. */
  protected classify(features: Tensor): Tensor {
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(features))));
  }
}

/**
 * A small MobileNetV3-style Fashion-MNIST classifier whose activations have the bounded, skewed and
 * one-sided distributions that stress histogram calibration: hardswish everywhere, sigmoid-gated
 * squeeze-excite in each block, and a tanh on the head features before the classifier.
 */
export class MobileSeNet extends MobileBackbone {
  readonly head: Sequential;

  constructor(options: MobileNetOptions = {}) {
    super(options);
    this.head = new Sequential(
      new Conv2d(32, 64, 1, { bias: false, generator: options.generator }),
      new BatchNorm2d(64),
      new Tanh(),
    );
    this.addClassifier(options.generator);
  }

  forward(x: Tensor): Tensor {
    const y = this.block2.call(this.block1.call(this.stem.call(this.quant.call(x))));
    return this.classify(this.head.call(y));
  }
}
