// Small residual networks: conv-bn-relu blocks with a residual add, pooled into a linear head; and one shaped
// like QTK's reference network (examples/src/reference-net.ts) with the widths a test picks.
import * as nn from '@qtk/nn';
import { Generator, type Tensor } from '@qtk/tensor';

/** quant → conv-bn-relu → conv-bn + add (residual) → relu → conv → average pool → linear → dequant. */
export class TinyResNet extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly conv0: nn.Conv2d;
  readonly bn0 = new nn.BatchNorm2d(8);
  readonly relu0 = new nn.ReLU();
  readonly conv1: nn.Conv2d;
  readonly bn1 = new nn.BatchNorm2d(8);
  readonly relu1 = new nn.ReLU();
  readonly conv2: nn.Conv2d;
  readonly pool = new nn.AdaptiveAvgPool2d(1);
  readonly flatten = new nn.Flatten();
  readonly fc: nn.Linear;
  readonly dequant = new nn.DeQuantStub();

  constructor(seed = 7) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new nn.Conv2d(3, 8, 3, { padding: 1, generator });
    this.conv1 = new nn.Conv2d(8, 8, 3, { padding: 1, generator });
    this.conv2 = new nn.Conv2d(8, 16, 1, { generator });
    this.fc = new nn.Linear(16, 4, { generator });
  }

  forward(x: Tensor): Tensor {
    const y = this.relu0.call(this.bn0.call(this.conv0.call(this.quant.call(x))));
    const z = this.relu1.call(this.bn1.call(this.conv1.call(y)).add(y));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(this.conv2.call(z)))));
  }
}

/**
 * quant → conv-bn-relu → conv-bn + residual add → relu → conv → sigmoid → average pool → flatten →
 * fc → dequant: a conv/linear output feeding the DeQuantStub, a fused add, a table op.
 */
export class ResidualSigmoidNet extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly conv0: nn.Conv2d;
  readonly bn0 = new nn.BatchNorm2d(6);
  readonly relu0 = new nn.ReLU();
  readonly conv1: nn.Conv2d;
  readonly bn1 = new nn.BatchNorm2d(6);
  readonly relu1 = new nn.ReLU();
  readonly conv2: nn.Conv2d;
  readonly act = new nn.Sigmoid();
  readonly pool = new nn.AdaptiveAvgPool2d(1);
  readonly flatten = new nn.Flatten();
  readonly fc: nn.Linear;
  readonly dequant = new nn.DeQuantStub();

  constructor(seed = 5) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new nn.Conv2d(3, 6, 3, { padding: 1, generator });
    this.conv1 = new nn.Conv2d(6, 6, 3, { padding: 1, generator });
    this.conv2 = new nn.Conv2d(6, 8, 1, { generator });
    this.fc = new nn.Linear(8, 4, { generator });
  }

  forward(x: Tensor): Tensor {
    const y = this.relu0.call(this.bn0.call(this.conv0.call(this.quant.call(x))));
    const z = this.relu1.call(this.bn1.call(this.conv1.call(y)).add(y));
    const s = this.act.call(this.conv2.call(z));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(s))));
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
