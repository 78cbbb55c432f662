// Small residual networks: conv-bn-relu blocks with a residual add, pooled into a linear head; and one shaped
// like QTK's reference network (examples/src/reference-net.ts) with the widths a test picks.
import * as nn from '@qtk/nn';
import { Generator, type Tensor } from '@qtk/tensor';

export interface TinyResNetOptions {
  /** Channels of the two conv-bn-relu layers; default 8. */
  channels?: number;
  /** Output channels of the 1×1 conv before the pool; default 16. */
  headChannels?: number;
  /** A Sigmoid (`act`, a table op) after the 1×1 conv; default false. */
  sigmoid?: boolean;
}

/**
 * quant → conv-bn-relu → conv-bn + add (residual) → relu → 1×1 conv (→ sigmoid) → average pool → flatten →
 * linear (4 classes) → dequant, on 3-channel images. The children are set in that order; the generator draws
 * conv0, conv1, conv2, then fc.
 */
export class TinyResNet extends nn.Module {
  declare readonly quant: nn.QuantStub;
  declare readonly conv0: nn.Conv2d;
  declare readonly bn0: nn.BatchNorm2d;
  declare readonly relu0: nn.ReLU;
  declare readonly conv1: nn.Conv2d;
  declare readonly bn1: nn.BatchNorm2d;
  declare readonly relu1: nn.ReLU;
  declare readonly conv2: nn.Conv2d;
  declare readonly act?: nn.Sigmoid;
  declare readonly pool: nn.AdaptiveAvgPool2d;
  declare readonly flatten: nn.Flatten;
  declare readonly fc: nn.Linear;
  declare readonly dequant: nn.DeQuantStub;

  constructor(seed = 7, { channels = 8, headChannels = 16, sigmoid = false }: TinyResNetOptions = {}) {
    super();
    const generator = new Generator(seed);
    this.setChild('quant', new nn.QuantStub());
    this.setChild('conv0', new nn.Conv2d(3, channels, 3, { padding: 1, generator }));
    this.setChild('bn0', new nn.BatchNorm2d(channels));
    this.setChild('relu0', new nn.ReLU());
    this.setChild('conv1', new nn.Conv2d(channels, channels, 3, { padding: 1, generator }));
    this.setChild('bn1', new nn.BatchNorm2d(channels));
    this.setChild('relu1', new nn.ReLU());
    this.setChild('conv2', new nn.Conv2d(channels, headChannels, 1, { generator }));
    if (sigmoid) this.setChild('act', new nn.Sigmoid());
    this.setChild('pool', new nn.AdaptiveAvgPool2d(1));
    this.setChild('flatten', new nn.Flatten());
    this.setChild('fc', new nn.Linear(headChannels, 4, { generator }));
    this.setChild('dequant', new nn.DeQuantStub());
  }

  forward(x: Tensor): Tensor {
    const y = this.relu0.call(this.bn0.call(this.conv0.call(this.quant.call(x))));
    const z = this.relu1.call(this.bn1.call(this.conv1.call(y)).add(y));
    const head = this.conv2.call(z);
    const s = this.act ? this.act.call(head) : head;
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(s))));
  }
}

/**
 * TinyResNet with 6 channels, an 8-channel head and the sigmoid, seed 5: a conv/linear output feeding the
 * DeQuantStub, a fused add, a table op.
 */
export class ResidualSigmoidNet extends TinyResNet {
  declare readonly act: nn.Sigmoid;

  constructor(seed = 5) {
    super(seed, { channels: 6, headChannels: 8, sigmoid: true });
  }
}

/** A 3×3 conv with no bias (a BatchNorm follows it), padded to keep the size at stride 1. */
function conv3x3(cin: number, cout: number, stride: number, g: Generator): nn.Conv2d {
  return new nn.Conv2d(cin, cout, 3, { stride, padding: 1, bias: false, generator: g });
}

/** conv 3×3 (no bias) → bn → relu. */
export class ConvBnRelu extends nn.Module {
  readonly conv: nn.Conv2d;
  readonly bn: nn.BatchNorm2d;
  readonly relu = new nn.ReLU();
  constructor(cin: number, cout: number, stride: number, g: Generator) {
    super();
    this.conv = conv3x3(cin, cout, stride, g);
    this.bn = new nn.BatchNorm2d(cout);
  }
  forward(x: Tensor): Tensor {
    return this.relu.call(this.bn.call(this.conv.call(x)));
  }
}

/** relu(bn2(conv2(relu(bn1(conv1(x))))) + x). */
export class ResidualBlock extends nn.Module {
  readonly first: ConvBnRelu;
  readonly conv2: nn.Conv2d;
  readonly bn2: nn.BatchNorm2d;
  readonly relu = new nn.ReLU();
  constructor(c: number, g: Generator) {
    super();
    this.first = new ConvBnRelu(c, c, 1, g);
    this.conv2 = conv3x3(c, c, 1, g);
    this.bn2 = new nn.BatchNorm2d(c);
  }
  forward(x: Tensor): Tensor {
    return this.relu.call(this.bn2.call(this.conv2.call(this.first.call(x))).add(x));
  }
}

/**
 * A small network in the style of QTK's reference network (the integer export's tests): conv-BN-ReLU blocks with
 * residual adds (fused into the conv as its sumin), stride-2 convs down to 7×7 (bernoulli2 pools windows of at
 * most 7×7), global average pool, flatten, and a Linear head (kept as a high-precision int32 output there).
 */
export class ResidualNet extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly stem: ConvBnRelu;
  readonly block1: ResidualBlock;
  readonly down1: ConvBnRelu;
  readonly block2: ResidualBlock;
  readonly down2: ConvBnRelu;
  readonly block3: ResidualBlock;
  readonly pool = new nn.AdaptiveAvgPool2d(1);
  readonly flatten = new nn.Flatten({ startDim: 1 });
  readonly fc: nn.Linear;
  readonly dequant = new nn.DeQuantStub();
  constructor(seed = 1) {
    super();
    const g = new Generator(seed);
    this.stem = new ConvBnRelu(1, 16, 1, g);
    this.block1 = new ResidualBlock(16, g);
    this.down1 = new ConvBnRelu(16, 32, 2, g);
    this.block2 = new ResidualBlock(32, g);
    this.down2 = new ConvBnRelu(32, 64, 2, g);
    this.block3 = new ResidualBlock(64, g);
    this.fc = new nn.Linear(64, 10, { generator: g });
    // non-trivial BN statistics, so that folding them changes the weights and biases
    const bns = [this.stem, this.block1.first, this.down1, this.block2.first, this.down2, this.block3.first]
      .map((b) => b.bn)
      .concat([this.block1.bn2, this.block2.bn2, this.block3.bn2]);
    bns.forEach((bn, i) => {
      const c = bn.runningMean!.size;
      const gi = new Generator(seed * 100 + i);
      for (let k = 0; k < c; k++) {
        bn.runningMean!.values()[k] = 0.2 * gi.uniform() - 0.1;
        bn.runningVar!.values()[k] = 0.5 + 0.5 * gi.uniform();
      }
    });
  }
  forward(x: Tensor): Tensor {
    let y = this.block1.call(this.stem.call(this.quant.call(x)));
    y = this.block2.call(this.down1.call(y));
    y = this.block3.call(this.down2.call(y));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(y))));
  }
}

/** conv-bn-relu, conv-bn, shortcut (1×1 conv-bn when the shape changes), add, relu. */
export class ShortcutBlock extends nn.Module {
  readonly conv1: nn.Conv2d;
  readonly bn1: nn.BatchNorm2d;
  readonly relu1 = new nn.ReLU();
  readonly conv2: nn.Conv2d;
  readonly bn2: nn.BatchNorm2d;
  readonly short: nn.Sequential | null;
  readonly relu2 = new nn.ReLU();

  constructor(cin: number, cout: number, stride: number, g: Generator) {
    super();
    this.conv1 = conv3x3(cin, cout, stride, g);
    this.bn1 = new nn.BatchNorm2d(cout);
    this.conv2 = conv3x3(cout, cout, 1, g);
    this.bn2 = new nn.BatchNorm2d(cout);
    this.short =
      stride !== 1 || cin !== cout
        ? new nn.Sequential(
            new nn.Conv2d(cin, cout, 1, { stride, bias: false, generator: g }),
            new nn.BatchNorm2d(cout),
          )
        : null;
  }

  forward(x: Tensor): Tensor {
    const y = this.bn2.call(this.conv2.call(this.relu1.call(this.bn1.call(this.conv1.call(x)))));
    return this.relu2.call(y.add(this.short ? this.short.call(x) : x));
  }
}

/**
 * quant (scale 1/128) → stem conv-bn-relu → blocks of `widths[0]`, `widths[1]` (stride 2), `widths[2]` (stride 2)
 * → global pool → linear to 10 classes → dequant, on 1-channel images; weights drawn from `new Generator(seed)`.
 */
export class ShortcutResNet extends nn.Module {
  readonly quant = new nn.QuantStub({ scale: 1 / 128 });
  readonly stem: nn.Sequential;
  readonly layer1: ShortcutBlock;
  readonly layer2: ShortcutBlock;
  readonly layer3: ShortcutBlock;
  readonly pool = new nn.AdaptiveAvgPool2d(1);
  readonly flatten = new nn.Flatten({ startDim: 1 });
  readonly fc: nn.Linear;
  readonly dequant = new nn.DeQuantStub();

  constructor(seed: number, widths: readonly [number, number, number] = [8, 16, 32]) {
    super();
    const g = new Generator(seed);
    const [w1, w2, w3] = widths;
    this.stem = new nn.Sequential(conv3x3(1, w1, 1, g), new nn.BatchNorm2d(w1), new nn.ReLU());
    this.layer1 = new ShortcutBlock(w1, w1, 1, g);
    this.layer2 = new ShortcutBlock(w1, w2, 2, g);
    this.layer3 = new ShortcutBlock(w2, w3, 2, g);
    this.fc = new nn.Linear(w3, 10, { generator: g });
  }

  forward(x: Tensor): Tensor {
    let y = this.stem.call(this.quant.call(x));
    y = this.layer3.call(this.layer2.call(this.layer1.call(y)));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(y))));
  }
}
