// Small float models with the mistakes the profiler's checks find: unfused chains, shared modules, a
// quantized output, an op a march lacks, a functional op inside a submodule.
import { BatchNorm2d, Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU, SELU } from '@qtk/nn';
import { Generator, selu, type Tensor } from '@qtk/tensor';
import { call } from './inputs.js';

/** quant → conv-bn-relu → conv + conv-bn (a residual add) → relu → flatten → fc → dequant: every chain fusable. */
export class UnfusedNet extends Module {
  readonly quant = new QuantStub();
  readonly conv0: Conv2d;
  readonly bn0 = new BatchNorm2d(4);
  readonly relu0 = new ReLU();
  readonly conv1: Conv2d;
  readonly bn1 = new BatchNorm2d(4);
  readonly relu1 = new ReLU();
  readonly flatten = new Flatten();
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();
  constructor(seed = 11) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new Conv2d(3, 4, 3, { padding: 1, generator });
    this.conv1 = new Conv2d(4, 4, 1, { generator });
    this.fc = new Linear(4 * 4 * 4, 3, { generator });
  }
  forward(x: Tensor): Tensor {
    const y = call(this.relu0, call(this.bn0, call(this.conv0, call(this.quant, x))));
    const z = call(this.relu1, call(this.bn1, call(this.conv1, y)).add(y));
    return call(this.dequant, call(this.fc, call(this.flatten, z)));
  }
}

/** quant → conv → relu → the same conv again → bn → dequant: `conv` is called twice. */
export class SharedConvNet extends Module {
  readonly quant = new QuantStub();
  readonly conv: Conv2d;
  readonly relu = new ReLU();
  readonly bn = new BatchNorm2d(4);
  readonly dequant = new DeQuantStub();
  constructor(seed = 13) {
    super();
    this.conv = new Conv2d(4, 4, 1, { generator: new Generator(seed) });
  }
  forward(x: Tensor): Tensor {
    const y = call(this.relu, call(this.conv, call(this.quant, x)));
    return call(this.dequant, call(this.bn, call(this.conv, y)));
  }
}

/** quant → conv0 → bn → conv1 → bn (the same BatchNorm) → dequant: the shared BatchNorm keeps both convs unfused. */
export class SharedNormNet extends Module {
  readonly quant = new QuantStub();
  readonly conv0: Conv2d;
  readonly conv1: Conv2d;
  readonly bn = new BatchNorm2d(4);
  readonly dequant = new DeQuantStub();
  constructor(seed = 17) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new Conv2d(4, 4, 1, { generator });
    this.conv1 = new Conv2d(4, 4, 1, { generator });
  }
  forward(x: Tensor): Tensor {
    const y = call(this.bn, call(this.conv0, call(this.quant, x)));
    return call(this.dequant, call(this.bn, call(this.conv1, y)));
  }
}

/** quant → conv → relu → conv, and no DeQuantStub: the output leaves quantized. */
export class NoDeQuantNet extends Module {
  readonly quant = new QuantStub();
  readonly conv0: Conv2d;
  readonly relu = new ReLU();
  readonly conv1: Conv2d;
  constructor(seed = 19) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new Conv2d(3, 4, 1, { generator });
    this.conv1 = new Conv2d(4, 4, 1, { generator });
  }
  forward(x: Tensor): Tensor {
    return call(this.conv1, call(this.relu, call(this.conv0, call(this.quant, x))));
  }
}

/** quant → conv → SELU → conv → dequant: bernoulli2 has no SELU. */
export class SeluNet extends Module {
  readonly quant = new QuantStub();
  readonly conv0: Conv2d;
  readonly selu = new SELU();
  readonly conv1: Conv2d;
  readonly dequant = new DeQuantStub();
  constructor(seed = 23) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new Conv2d(3, 4, 1, { generator });
    this.conv1 = new Conv2d(4, 4, 1, { generator });
  }
  forward(x: Tensor): Tensor {
    return call(this.dequant, call(this.conv1, call(this.selu, call(this.conv0, call(this.quant, x)))));
  }
}

/** conv-bn-relu → functional SELU, inside a submodule's forward. */
export class ConvSeluBlock extends Module {
  readonly conv: Conv2d;
  readonly bn = new BatchNorm2d(4);
  readonly relu = new ReLU();
  constructor(generator: Generator) {
    super();
    this.conv = new Conv2d(3, 4, 1, { generator });
  }
  forward(x: Tensor): Tensor {
    return selu(call(this.relu, call(this.bn, call(this.conv, x))));
  }
}

/** quant → block (ConvSeluBlock: conv-bn-relu, functional SELU) → flatten → fc → dequant, on [n, 3, 4, 4] inputs. */
export class NestedSeluNet extends Module {
  readonly quant = new QuantStub();
  readonly block: ConvSeluBlock;
  readonly flatten = new Flatten();
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();
  constructor(seed = 31) {
    super();
    const generator = new Generator(seed);
    this.block = new ConvSeluBlock(generator);
    this.fc = new Linear(4 * 4 * 4, 3, { generator });
  }
  forward(x: Tensor): Tensor {
    return call(this.dequant, call(this.fc, call(this.flatten, call(this.block, call(this.quant, x)))));
  }
}
