// Small models for the qconfig templates' tests: an output shared by a model output and an op, a composite op,
// one module called twice.
import { AdaptiveAvgPool2d, Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, Sigmoid, Softmax } from '@qtk/nn';
import { add, cat, Generator, type Tensor } from '@qtk/tensor';

/** quant → conv → pool → flatten → fc, whose output is both a model output and the input of a sigmoid (a second output). */
export class SharedHeadNet extends Module {
  readonly quant = new QuantStub();
  readonly conv: Conv2d;
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten();
  readonly fc: Linear;
  readonly act = new Sigmoid();
  readonly dequant = new DeQuantStub();
  readonly dequantAct = new DeQuantStub();

  constructor(seed = 6) {
    super();
    const generator = new Generator(seed);
    this.conv = new Conv2d(3, 4, 3, { padding: 1, generator });
    this.fc = new Linear(4, 2, { generator });
  }

  forward(x: Tensor): Tensor[] {
    const y = this.fc.call(this.flatten.call(this.pool.call(this.conv.call(this.quant.call(x)))));
    return [this.dequant.call(y), this.dequantAct.call(this.act.call(y))];
  }
}

/** quant → conv → conv + functional add → cat → softmax (a composite on bayes) → dequant. */
export class CompositeNet extends Module {
  readonly quant = new QuantStub();
  readonly conv0: Conv2d;
  readonly conv1: Conv2d;
  readonly softmax = new Softmax(1);
  readonly dequant = new DeQuantStub();

  constructor(seed = 8) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new Conv2d(3, 4, 1, { generator });
    this.conv1 = new Conv2d(4, 4, 1, { generator });
  }

  forward(x: Tensor): Tensor {
    const a = this.conv0.call(this.quant.call(x));
    const b = add(this.conv1.call(a), a);
    return this.dequant.call(this.softmax.call(cat([b, a], 1)));
  }
}

/** quant → conv → sigmoid → conv → the same sigmoid → dequant: one module, two calls. */
export class SharedSigmoidNet extends Module {
  readonly quant = new QuantStub();
  readonly conv0: Conv2d;
  readonly conv1: Conv2d;
  readonly act = new Sigmoid();
  readonly dequant = new DeQuantStub();

  constructor(seed = 9) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new Conv2d(3, 4, 1, { generator });
    this.conv1 = new Conv2d(4, 4, 1, { generator });
  }

  forward(x: Tensor): Tensor {
    const a = this.act.call(this.conv0.call(this.quant.call(x)));
    return this.dequant.call(this.act.call(this.conv1.call(a)));
  }
}
