// A residual classifier shaped like QTK's reference network (examples/src/reference-net.ts: a stem and three
// residual blocks with 1×1 shortcuts where the shape changes, pool, linear), with the widths a test picks.
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
import { Generator, type Tensor } from '@qtk/tensor';

function conv3x3(cin: number, cout: number, stride: number, g: Generator): Conv2d {
  return new Conv2d(cin, cout, 3, { stride, padding: 1, bias: false, generator: g });
}

/** conv-bn-relu, conv-bn, shortcut (1×1 conv-bn when the shape changes), add, relu. */
export class ShortcutBlock extends Module {
  readonly conv1: Conv2d;
  readonly bn1: BatchNorm2d;
  readonly relu1 = new ReLU();
  readonly conv2: Conv2d;
  readonly bn2: BatchNorm2d;
  readonly short: Sequential | null;
  readonly relu2 = new ReLU();

  constructor(cin: number, cout: number, stride: number, g: Generator) {
    super();
    this.conv1 = conv3x3(cin, cout, stride, g);
    this.bn1 = new BatchNorm2d(cout);
    this.conv2 = conv3x3(cout, cout, 1, g);
    this.bn2 = new BatchNorm2d(cout);
    this.short =
      stride !== 1 || cin !== cout
        ? new Sequential(new Conv2d(cin, cout, 1, { stride, bias: false, generator: g }), new BatchNorm2d(cout))
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
export class ShortcutResNet extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly stem: Sequential;
  readonly layer1: ShortcutBlock;
  readonly layer2: ShortcutBlock;
  readonly layer3: ShortcutBlock;
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten({ startDim: 1 });
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();

  constructor(seed: number, widths: readonly [number, number, number] = [8, 16, 32]) {
    super();
    const g = new Generator(seed);
    const [w1, w2, w3] = widths;
    this.stem = new Sequential(conv3x3(1, w1, 1, g), new BatchNorm2d(w1), new ReLU());
    this.layer1 = new ShortcutBlock(w1, w1, 1, g);
    this.layer2 = new ShortcutBlock(w1, w2, 2, g);
    this.layer3 = new ShortcutBlock(w2, w3, 2, g);
    this.fc = new Linear(w3, 10, { generator: g });
  }

  forward(x: Tensor): Tensor {
    let y = this.stem.call(this.quant.call(x));
    y = this.layer3.call(this.layer2.call(this.layer1.call(y)));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(y))));
  }
}
